"""Issue 41: one plug-in loader (`virtbench.plugins.load`) serves the platform, scenario and
workload registries and the report's sections; no other module walks a package."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import virtbench
from virtbench import plugins

SRC = Path(virtbench.__file__).parent
WALKERS = {"walk_packages", "iter_modules"}


def _package(root: Path) -> None:
    files = {
        "vbplug/__init__.py": "",
        "vbplug/registry.py": "SEEN = []\n",
        "vbplug/a.py": "from .registry import SEEN\nSEEN.append('a')\n",
        "vbplug/skipme.py": "from .registry import SEEN\nSEEN.append('skipme')\n",
        "vbplug/sub/__init__.py": "",
        "vbplug/sub/b.py": "from ..registry import SEEN\nSEEN.append('b')\n",
    }
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)


def _fresh(monkeypatch, tmp_path: Path):
    _package(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in [m for m in sys.modules if m == "vbplug" or m.startswith("vbplug.")]:
        monkeypatch.delitem(sys.modules, name)


def test_load_imports_every_module_but_the_skipped_ones(monkeypatch, tmp_path):
    _fresh(monkeypatch, tmp_path)
    plugins.load("vbplug", skip={"skipme"})
    assert sorted(sys.modules["vbplug.registry"].SEEN) == ["a", "b"]


def test_load_without_recursion_leaves_subpackages_to_themselves(monkeypatch, tmp_path):
    _fresh(monkeypatch, tmp_path)
    plugins.load("vbplug", recursive=False)
    assert sorted(sys.modules["vbplug.registry"].SEEN) == ["a", "skipme"]
    assert "vbplug.sub.b" not in sys.modules


def test_no_module_but_the_loader_walks_a_package():
    walkers = []
    for path in sorted(SRC.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Attribute) and node.attr in WALKERS:
                walkers.append(str(path.relative_to(SRC)))
    assert set(walkers) == {"plugins.py"}


def test_the_registries_find_their_plug_ins_through_it():
    from virtbench.platforms import registry as platforms
    from virtbench.report import sections
    from virtbench.scenarios import registry as scenarios
    from virtbench.workloads import registry as workloads

    assert {"native", "container", "vm"} <= set(platforms.load_all())
    assert {"solo", "idle-neighbours"} <= set(scenarios.load_all())
    assert "sysbench-cpu-1t" in workloads.load_all()
    sections.discover()
    names = {e.fn.__module__ for e in sections.registered()}
    assert "virtbench.report.core.verdict" in names
    assert any(n.startswith("virtbench.report.suites.") for n in names)
