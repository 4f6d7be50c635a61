"""Label keys are named once (labelkeys.py): every key a producer writes is defined there,
and no module, producer or reader, names one as a literal."""

from __future__ import annotations

import ast
from pathlib import Path

from virtbench import labelkeys

SRC = Path(labelkeys.__file__).parent  # every module but labelkeys.py names keys through it


def _is_labels(node: ast.expr) -> bool:
    """An expression that holds labels: `labels`, `x.labels`, `row["labels"]`, `lab`."""
    if isinstance(node, ast.Name):
        return "labels" in node.id or node.id == "lab"
    if isinstance(node, ast.Attribute):
        return "labels" in node.attr
    if isinstance(node, ast.Subscript):
        return isinstance(node.slice, ast.Constant) and node.slice.value == "labels"
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
        return node.func.id == "labels_of"
    return False


def _text(node: ast.expr | None) -> str | None:
    ok = isinstance(node, ast.Constant) and isinstance(node.value, str)
    return node.value if ok else None  # type: ignore[union-attr]


def _dict_keys(node: ast.expr) -> list[str]:
    if not isinstance(node, ast.Dict):
        return []
    return [k for key in node.keys if (k := _text(key)) is not None]


# a workload's declared labels (workloads/base.py): keys its samples carry
DECLARED = frozenset({"dimension_labels", "ignored_labels"})


# methods whose keyword arguments are labels (workloads/base.py)
KEYWORD_LABELS = frozenset({"sample", "label_all"})


def _tuple_keys(node: ast.expr) -> list[str]:
    if not isinstance(node, ast.Tuple | ast.List):
        return []
    return [k for item in node.elts if (k := _text(item)) is not None]


def literal_keys(tree: ast.AST) -> tuple[set[str], set[str]]:
    """(keys written, keys read) as string literals on labels in a module."""
    written: set[str] = set()
    read: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for t in targets:
                if isinstance(t, ast.Subscript) and _is_labels(t.value) and _text(t.slice):
                    written.add(_text(t.slice))  # type: ignore[arg-type]
                if isinstance(t, ast.Name) and "labels" in t.id and node.value is not None:
                    written.update(_dict_keys(node.value))
                if isinstance(t, ast.Name) and t.id in DECLARED and node.value is not None:
                    written.update(_tuple_keys(node.value))
        elif isinstance(node, ast.Call):
            f = node.func
            for kw in node.keywords:
                if kw.arg == "labels":
                    written.update(_dict_keys(kw.value))
                elif isinstance(f, ast.Attribute) and f.attr in KEYWORD_LABELS:
                    if kw.arg:
                        written.add(kw.arg)  # Workload.sample(metric, value, key=...)
                    else:
                        written.update(_dict_keys(kw.value))  # ..., **{"key": ...})
            if isinstance(f, ast.Attribute) and f.attr == "dim" and node.args:
                read.update(k for k in [_text(node.args[0])] if k)  # GroupKey.dim(key)
            if isinstance(f, ast.Attribute) and _is_labels(f.value):
                first = _text(node.args[0]) if node.args else None
                if f.attr == "update":
                    for a in node.args:
                        written.update(_dict_keys(a))
                    for kw in node.keywords:
                        written.update([kw.arg] if kw.arg else _dict_keys(kw.value))
                elif f.attr == "setdefault" and first:
                    written.add(first)
                elif f.attr in ("get", "pop") and first:
                    read.add(first)
        elif isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load):
            if _is_labels(node.value) and (k := _text(node.slice)):
                read.add(k)
        elif (
            isinstance(node, ast.Compare)
            and isinstance(node.ops[0], ast.In | ast.NotIn)
            and _is_labels(node.comparators[0])
            and (k := _text(node.left))
        ):
            read.add(k)
    return written, read


def _modules():
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC).as_posix()
        if rel != "labelkeys.py":
            yield rel, literal_keys(ast.parse(path.read_text()))


DEFINED = {v for k, v in vars(labelkeys).items() if k.isupper() and isinstance(v, str)}


def test_every_written_label_key_is_defined():
    undefined = {f"{rel}: {key}" for rel, (written, _) in _modules() for key in written - DEFINED}
    assert not undefined, "define these in labelkeys.py: " + ", ".join(sorted(undefined))


def test_producers_and_readers_name_label_keys_through_labelkeys():
    # every module, producer or reader: a key renamed in labelkeys.py is renamed everywhere
    literal = {f"{rel}: {key}" for rel, (written, read) in _modules() for key in written | read}
    assert not literal, "use labelkeys constants: " + ", ".join(sorted(literal))


def test_each_key_is_named_once():
    names = [k for k in vars(labelkeys) if k.isupper()]
    values = [getattr(labelkeys, k) for k in names]
    assert len(set(values)) == len(values)


def test_the_scan_sees_literal_keys():
    # the scan itself: a write, a read and a membership test of literal keys are found
    tree = ast.parse(
        's.labels["a"] = 1\nx = row["labels"].get("b")\nif "c" in labels: pass\n'
        'ignored_labels += ("d",)\nself.sample("m", 1.0, e=2)\ng.key.dim("f")\n'
        'self.sample("m", 1.0, **{"g": 3})\ns.labels.update(x, **{"h": 4})'
    )
    assert literal_keys(tree) == ({"a", "d", "e", "g", "h"}, {"b", "c", "f"})
