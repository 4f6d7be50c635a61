"""Issue 41: the import-graph section of docs/ARCHITECTURE.md is generated from the source by
scripts/import_graph.py; it must match the code, and module-level imports form no cycle."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
SCRIPT = ROOT / "scripts" / "import_graph.py"
SOURCE = ROOT / "src" / "virtbench"
DOC = ROOT / "docs" / "ARCHITECTURE.md"


def _graph(*args: str) -> subprocess.CompletedProcess[str]:
    # -I: the script reads the tree as text and imports nothing of it, nor of the cwd
    argv = [sys.executable, "-I", str(SCRIPT), *args]
    return subprocess.run(argv, capture_output=True, text=True, timeout=120)


def _copy(tmp_path: Path) -> tuple[Path, Path]:
    source = tmp_path / "src" / "virtbench"
    shutil.copytree(SOURCE, source, ignore=shutil.ignore_patterns("__pycache__"))
    doc = tmp_path / "ARCHITECTURE.md"
    shutil.copy(DOC, doc)
    return source, doc


def test_the_doc_matches_the_code_and_module_level_imports_have_no_cycle():
    r = _graph("--check")
    assert r.returncode == 0, r.stderr


def test_a_doc_that_drifted_from_the_code_fails(tmp_path):
    doc = tmp_path / "ARCHITECTURE.md"
    doc.write_text(DOC.read_text().replace("`store` → errors, ", "`store` → analysis, errors, "))
    r = _graph("--check", "--doc", str(doc))
    assert r.returncode == 1
    assert "the import-graph section differs from the code" in r.stderr


def test_a_module_level_import_that_closes_a_cycle_fails(tmp_path):
    source, doc = _copy(tmp_path)
    results = source / "results.py"
    results.write_text(results.read_text() + "\nfrom .runner import locks  # noqa\n")
    r = _graph("--check", "--source", str(source), "--doc", str(doc))
    assert r.returncode == 1
    assert "module-level package cycle:" in r.stderr and "results" in r.stderr


def test_a_function_level_import_is_listed_as_climbing_not_failed(tmp_path):
    source, doc = _copy(tmp_path)
    results = source / "results.py"
    results.write_text(results.read_text() + "\n\ndef later():\n    from .runner import locks\n")
    assert _graph("--write", "--source", str(source), "--doc", str(doc)).returncode == 0
    r = _graph("--check", "--source", str(source), "--doc", str(doc))
    assert r.returncode == 0, r.stderr
    assert "climbs: `results` → `runner` (results → runner/locks)" in doc.read_text()


def test_a_module_no_layer_names_fails(tmp_path):
    source, doc = _copy(tmp_path)
    (source / "newroom.py").write_text('"""new"""\n')
    r = _graph("--check", "--source", str(source), "--doc", str(doc))
    assert r.returncode == 1
    assert "newroom: not in any layer" in r.stderr
