"""Report entry point: `write(store, run_id, results_dir, output) -> (html_path, markdown)`.

Reads only the store, runs every registered section (see `report.sections`) and writes ONE
self-contained HTML file (inline CSS and SVG, no script, no external resource); returns the
compact Markdown summary the CLI prints.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from .. import safefs
from ..errors import VirtbenchError
from ..store.db import Store
from . import sections
from .data import ReportData
from .html import Raw, h, page


def render(store: Store, run_id: str) -> tuple[str, str]:
    """(html, markdown) of one run."""
    sections.discover()
    with _collector_paused():
        data = ReportData.load(store, run_id)
        parts = sections.render(data)
    body = "".join(
        f'<section id="{s.anchor}"><h2>{h(s.title)}</h2>{s.html}</section>' for s in parts
    )
    nav = [(s.anchor, s.title) for s in parts]
    title = f"virtbench · {data.run['name']} · {run_id}"
    subtitle = (
        "mean ± 95% CI half-width (Student t) over valid repetitions, unless a table says"
        " ± sd; "
        "ratio > 1 = better than the baseline; overhead % > 0 = worse; "
        "high CV (> 10%) and invalid samples are flagged."
    )
    html_text = page(title, nav, Raw(body), subtitle)
    markdown = "\n\n".join(s.markdown for s in parts if s.markdown)
    return html_text, markdown


@contextmanager
def _collector_paused() -> Iterator[None]:
    """Python's cycle collector off while a report is built (back on after, if it was): a
    report holds millions of objects (rows, labels, groups) until its end and makes next to
    no garbage cycles, and the collector re-scanned all of them each time their number grew
    by a quarter: a quarter to a third of a colocation-web report's time, for nothing."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def default_path(results_dir: Path, run_id: str) -> Path:
    return Path(results_dir) / "reports" / f"{run_id}.html"


def write(
    store: Store, run_id: str, results_dir: Path, output: Path | None = None
) -> tuple[Path, str]:
    path = Path(output) if output else default_path(results_dir, run_id)
    safefs.check_target(path)  # before the work of rendering: refused either way
    html_text, markdown = render(store, run_id)
    try:
        if not output:  # results/reports: made by us, readable like the reports in it
            safefs.make_dirs(path.parent, 0o755)
        # write-then-rename (safefs.write_file): a crash never leaves a half report where a
        # good one was, and a target that is a device, fifo, directory or symlink is refused
        # rather than replaced. A report killed in the write leaves a hidden owner-named
        # file, which the next report written here removes (`cleanup` cannot know --output)
        safefs.write_file(path, html_text, mode=0o644, kind="report")
    except OSError as exc:
        raise VirtbenchError(f"cannot write report {path}: {exc.strerror or exc}") from exc
    return path, markdown
