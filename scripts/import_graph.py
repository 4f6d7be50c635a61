#!/usr/bin/env python3
"""virtbench's import graph, computed from the source, written into docs/ARCHITECTURE.md.

Reads src/virtbench with `ast` only (nothing of virtbench is imported, so the graph of a
broken tree can still be drawn) and counts two kinds of import separately:

- module-level: the imports a module runs when it is imported (top-level statements, also
  inside a top-level `try`/`if`, but not under `if TYPE_CHECKING`); these are what can fail
  with a partly initialised module, so they must form no cycle at all;
- all: every import, also inside functions and under `TYPE_CHECKING`.

A "room" is a package under virtbench (`platforms/`, its subpackages included) or a
top-level module (`cli.py`). `LAYERS` places every room in a layer; an arrow from a room to
one in a higher layer climbs back up. The script fails on a room no layer names, so a new
module is placed when it is added.

    python3 scripts/import_graph.py            # print the section
    python3 scripts/import_graph.py --write    # rewrite it in docs/ARCHITECTURE.md
    python3 scripts/import_graph.py --check    # exit 1 if the doc differs or a cycle exists

tests/unit/test_import_graph.py runs `--check`.
"""

from __future__ import annotations

import argparse
import ast
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "virtbench"
SOURCE = ROOT / "src" / PACKAGE
DOC = ROOT / "docs" / "ARCHITECTURE.md"
BEGIN = "<!-- import-graph: begin (scripts/import_graph.py --write) -->"
END = "<!-- import-graph: end -->"

# Top to bottom. A room may import rooms of its own layer and of the layers below it. The
# runner imports the campaign's types (it runs what the campaign loaded), so it sits above
# it; `store`, `analysis` and `report` are the lower half's own stack (report reads analysis
# reads the store), below everything that measures and writes the store.
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("entry", ("__main__", "cli")),
    (
        "commands",
        ("fleet", "export", "doctor", "cleanup_all", "setup_all", "watchdog", "cli_output"),
    ),
    ("runner", ("runner",)),
    ("campaign", ("campaign",)),
    ("scenario", ("scenarios",)),
    ("workload", ("workloads", "ceiling")),
    ("drivers / serving", ("drivers", "serving")),
    ("metrics", ("metrics",)),
    ("platform", ("platforms",)),
    ("builds", ("images", "appstack", "java", "wasm", "probes_build")),
    (
        "host plumbing",
        (
            "setup_host",
            "cgroups",
            "hostnet",
            "hostinfo",
            "hostfloors",
            "tune",
            "cleanup",
            "doctor_registry",
            "tools",
            "cachedir",
            "filelock",
        ),
    ),
    ("report", ("report", "replication")),
    ("analysis", ("analysis",)),
    ("store", ("store",)),
    (
        "ground",
        (
            "results",
            "labelkeys",
            "suites",
            "cpubudget",
            "saturation",
            "validity",
            "naming",
            "ports",
            "procfs",
            "netstack",
            "directio",
            "diskceiling",
            "hostfs",
            "plugins",
            "ownedtmp",
            "safefs",
            "statedir",
            "pychild",
            "parsing",
            "errors",
        ),
    ),
)


@dataclass(frozen=True)
class Import:
    source: str  # importing module, dotted
    target: str  # imported module, dotted (a module file or a package's __init__)
    module_level: bool  # runs when `source` is imported


@dataclass
class Graph:
    modules: set[str] = field(default_factory=set)
    imports: list[Import] = field(default_factory=list)

    def edges(self, module_level: bool) -> set[tuple[str, str]]:
        return {
            (i.source, i.target)
            for i in self.imports
            if (i.module_level or not module_level) and i.source != i.target
        }


def module_name(path: Path, source: Path = SOURCE) -> str:
    parts = list(path.relative_to(source.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def room(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _walk(body: Iterable[ast.stmt], module_level: bool) -> Iterator[tuple[ast.stmt, bool]]:
    """Every import statement, and whether it runs at import time."""
    for node in body:
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node, module_level
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            yield from _walk(node.body, False)
        elif isinstance(node, ast.If) and _is_type_checking(node.test):
            yield from _walk(node.body, False)
            yield from _walk(node.orelse, module_level)
        elif isinstance(node, ast.ClassDef):
            # a class body runs at import time; its methods do not
            yield from _walk(node.body, module_level)
        else:
            for child_field in ("body", "orelse", "finalbody", "handlers", "cases"):
                children = getattr(node, child_field, None) or []
                stmts = [c for c in children if isinstance(c, ast.stmt)]
                for handler in children:
                    if isinstance(handler, ast.excepthandler | ast.match_case):
                        stmts.extend(handler.body)
                yield from _walk(stmts, module_level)


def _resolve(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    base = module.split(".")
    if not is_package:
        base = base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _targets(node: ast.stmt, module: str, is_package: bool, modules: set[str]) -> set[str]:
    """The virtbench modules an import statement runs: the named one and its packages."""
    named: list[str] = []
    if isinstance(node, ast.Import):
        named = [alias.name for alias in node.names]
    elif isinstance(node, ast.ImportFrom):
        base = _resolve(module, is_package, node)
        for alias in node.names:
            sub = f"{base}.{alias.name}"
            named.append(sub if sub in modules else base)
    found: set[str] = set()
    for name in named:
        if name != PACKAGE and not name.startswith(PACKAGE + "."):
            continue
        parts = name.split(".")
        # importing a.b.c runs a.b's __init__ first (the root package's is trivial), unless
        # a.b is the importer's own package: its __init__ began before the importer did
        own = module if is_package else module.rpartition(".")[0]
        for n in range(2, len(parts) + 1):
            prefix = ".".join(parts[:n])
            if prefix in modules and not (own == prefix or own.startswith(prefix + ".")):
                found.add(prefix)
    return found


def build(source: Path = SOURCE) -> Graph:
    graph = Graph()
    files = sorted(p for p in source.rglob("*.py") if "__pycache__" not in p.parts)
    graph.modules = {module_name(p, source) for p in files}
    for path in files:
        module = module_name(path, source)
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node, module_level in _walk(tree.body, True):
            for target in _targets(node, module, path.name == "__init__.py", graph.modules):
                graph.imports.append(Import(module, target, module_level))
    return graph


def cycles(edges: set[tuple[str, str]]) -> list[list[str]]:
    """Strongly connected components of more than one node (Tarjan), each sorted."""
    succ: dict[str, list[str]] = {}
    for a, b in sorted(edges):
        succ.setdefault(a, []).append(b)
        succ.setdefault(b, [])
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        # recursion depth is bounded by the module count (a few hundred)
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in succ[node]:
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(succ):
        if node not in index:
            visit(node)
    return sorted(found, key=lambda c: (-len(c), c))


def package_edges(edges: set[tuple[str, str]]) -> set[tuple[str, str]]:
    return {(room(a), room(b)) for a, b in edges if room(a) != room(b) and room(b) != "__init__"}


def layer_of() -> dict[str, int]:
    return {r: rank for rank, (_, rooms) in enumerate(LAYERS) for r in rooms}


class Unplaced(Exception):
    """A room that no layer names."""


def check_placed(graph: Graph) -> dict[str, int]:
    ranks = layer_of()
    rooms = {room(m) for m in graph.modules} - {"__init__"}
    missing = sorted(rooms - ranks.keys())
    if missing:
        raise Unplaced(
            f"{', '.join(missing)}: not in any layer of scripts/import_graph.py LAYERS; "
            "add each to the layer it belongs to"
        )
    gone = sorted(ranks.keys() - rooms)
    if gone:
        raise Unplaced(f"{', '.join(gone)}: in LAYERS but not in src/{PACKAGE}; remove them")
    return ranks


def upward(
    graph: Graph, ranks: dict[str, int], module_level: bool
) -> dict[tuple[str, str], list[str]]:
    """Package arrows to a room of a higher layer, each with the file imports that make it."""
    edges = graph.edges(module_level)
    found: dict[tuple[str, str], list[str]] = {}
    for a, b in sorted(edges):
        ra, rb = room(a), room(b)
        if ra == rb or rb == "__init__" or ranks[rb] >= ranks[ra]:
            continue
        if any(t.startswith(b + ".") for s, t in edges if s == a):
            continue  # `from pkg.mod import x` also runs pkg's __init__: name the module only
        found.setdefault((ra, rb), []).append(f"{_short(a)} → {_short(b)}")
    return found


def _short(module: str) -> str:
    return module.removeprefix(PACKAGE + ".").replace(".", "/")


def section(graph: Graph) -> str:
    ranks = check_placed(graph)
    lines = [
        BEGIN,
        "",
        "Generated by `scripts/import_graph.py --write` from the source (`ast`; nothing is",
        "imported); `tests/unit/test_import_graph.py` fails when this section differs from the",
        "code or when the module-level imports form a cycle. A room is a package under",
        "`virtbench/` or a top-level module. *Module-level* imports run when their module is",
        "imported; *all* adds those inside functions and under `TYPE_CHECKING`.",
        "",
        "| layer (top to bottom) | rooms | imports (module-level; *all only* in italics) |",
        "|---|---|---|",
    ]
    module_level = package_edges(graph.edges(True))
    every = package_edges(graph.edges(False))
    for name, rooms in LAYERS:
        cells = []
        for r in rooms:
            hard = sorted(b for a, b in module_level if a == r)
            soft = sorted(b for a, b in every if a == r and (a, b) not in module_level)
            arrows = ", ".join(hard + [f"*{b}*" for b in soft]) or "-"
            cells.append(f"`{r}` → {arrows}")
        lines.append(f"| {name} | {' '.join(f'`{r}`' for r in rooms)} | {'; '.join(cells)} |")
    lines.append("")
    rooms_count = len({room(m) for m in graph.modules} - {"__init__"})
    for label, level in (("module-level", True), ("all", False)):
        edges = graph.edges(level)
        pkg_cycles = cycles(package_edges(edges))
        file_cycles = cycles(edges)
        up = upward(graph, ranks, level)
        lines.append(
            f"- {label} imports: {len(package_edges(edges))} arrows between {rooms_count} "
            f"rooms, {len(up)} climbing to a higher layer, "
            f"{len(pkg_cycles)} package cycle(s), {len(file_cycles)} file cycle(s)"
            + ("" if not (pkg_cycles or file_cycles or up) else ":")
        )
        for c in pkg_cycles:
            lines.append(f"  - package cycle: {' ↔ '.join(c)}")
        for c in file_cycles:
            lines.append(f"  - file cycle ({len(c)} files): {', '.join(map(_short, c))}")
        for (a, b), files in up.items():
            lines.append(f"  - climbs: `{a}` → `{b}` ({', '.join(files)})")
    lines += ["", END]
    return "\n".join(lines) + "\n"


def replace_section(doc: str, new: str, where: Path = DOC) -> str:
    start, end = doc.find(BEGIN), doc.find(END)
    if start < 0 or end < start:
        raise SystemExit(f"{where}: markers {BEGIN!r} … {END!r} not found")
    return doc[:start] + new + doc[end + len(END) + 1 :]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--write", action="store_true", help="rewrite the doc's section")
    mode.add_argument("--check", action="store_true", help="fail on drift or a cycle")
    parser.add_argument("--source", type=Path, default=SOURCE, help="the virtbench package")
    parser.add_argument("--doc", type=Path, default=DOC, help="the page with the section")
    args = parser.parse_args(argv)
    graph = build(args.source)
    doc = args.doc
    try:
        text = section(graph)
    except Unplaced as exc:
        print(f"import_graph: {exc}", file=sys.stderr)
        return 1
    if args.write:
        doc.write_text(replace_section(doc.read_text(encoding="utf-8"), text, doc), "utf-8")
        return 0
    if not args.check:
        sys.stdout.write(text)
        return 0
    failures = []
    current = doc.read_text(encoding="utf-8")
    if replace_section(current, text, doc) != current:
        failures.append(
            f"{doc}: the import-graph section differs from the code; "
            "run `python3 scripts/import_graph.py --write`"
        )
    edges = graph.edges(True)
    for c in cycles(package_edges(edges)):
        failures.append(f"module-level package cycle: {' ↔ '.join(c)}")
    for c in cycles(edges):
        failures.append(f"module-level file cycle: {', '.join(map(_short, c))}")
    for failure in failures:
        print(f"import_graph: {failure}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
