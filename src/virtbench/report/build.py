"""Report entry point (minimal placeholder; replaced by the full report)."""

from __future__ import annotations

from pathlib import Path

from ..store.db import Store


def write(store: Store, run_id: str, results_dir: Path, output: Path | None = None):
    rows = store.sample_rows(run_id)
    md = [
        f"# virtbench run {run_id}",
        "",
        "| platform | test case | metric | value |",
        "|---|---|---|---|",
    ]
    for r in rows:
        md.append(
            f"| {r['platform']} | {r['test_case']} | {r['metric']} | {r['value']:.4g} {r['unit']} |"
        )
    text = "\n".join(md)
    path = output or Path(results_dir) / "reports" / f"{run_id}.html"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"<html><body><pre>{text}</pre></body></html>")
    return path, text
