"""What the bench scripts share: run a campaign into a results directory (the CLI in a child
process, or virtbench's runner in this one), read the run back from its store, and paired
ratios. Statistics are analysis/stats.py's; nothing here measures anything by itself.

Imported by its siblings as `from _campaign import ...` (a script's own folder is on
sys.path when it runs as `python bench/SCRIPT.py`).
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from virtbench.analysis.stats import Summary, summarize
from virtbench.store.db import DB_NAME, CellRow, Store

if TYPE_CHECKING:
    from virtbench.runner.run import Runner


# --- running ---------------------------------------------------------------------------
@dataclass(frozen=True)
class CliRun:
    """One `virtbench` command run to its end."""

    returncode: int
    wall_s: float  # monotonic, start to exit
    started: float  # epoch seconds at start and at exit (to set against a store's times)
    ended: float
    stdout: str
    stderr: str

    def print_tail(self, chars: int) -> None:
        """The last `chars` of its stdout and stderr, for a run that failed."""
        print(self.stdout[-chars:], self.stderr[-chars:])


def _sigint_default() -> None:
    """In the child before exec: a shell starts background jobs (`cmd &`, nohup) with SIGINT
    ignored, and Python then never turns it into KeyboardInterrupt, so the piece's SIGINT did
    nothing (a 2,400 s piece ran on until SIGTERM, 27 Nov)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def cli(*args: str, stop_after: float | None = None) -> CliRun:
    """`virtbench ARGS` with this interpreter (the venv's, and PYTHONPATH's code), captured.
    After `stop_after` seconds it gets SIGINT, as from Ctrl-C (a run tears down, keeps its
    finished cells and exits 130: continue it with --resume)."""
    return run_child([sys.executable, "-m", "virtbench.cli", *args], stop_after)


def run_child(argv: list[str], stop_after: float | None = None) -> CliRun:
    """`argv` to its end, captured; SIGINT after `stop_after` seconds (see cli)."""
    e0, t0 = time.time(), time.monotonic()
    with subprocess.Popen(
        argv,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=_sigint_default,
    ) as proc:
        # SIGTERM/SIGHUP to this script reach the run as SIGINT, and this script waits for its
        # teardown: killed alone, it released `flock` while its orphaned run went on measuring
        forward = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGHUP)}
        for s in forward:
            signal.signal(s, lambda *_: proc.send_signal(signal.SIGINT))
        try:
            stdout, stderr = proc.communicate(timeout=stop_after)
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGINT)
            stdout, stderr = proc.communicate()
        finally:
            for s, old in forward.items():
                signal.signal(s, old)
    return CliRun(proc.returncode, time.monotonic() - t0, e0, time.time(), stdout, stderr)


def run_campaign(
    campaign: str | Path | None,
    results: Path,
    *,
    report: bool = False,
    resume: str | None = None,
    stop_after: float | None = None,
) -> CliRun:
    """`virtbench run [CAMPAIGN] --results-dir RESULTS` (a built-in name or a file; None: the
    default campaign), or `--resume RUN_ID` of a run stored there, without the HTML report
    unless `report`; interrupted after `stop_after` seconds if given."""
    what = ["--resume", resume] if resume else [] if campaign is None else [str(campaign)]
    args = ["run", *what, "--results-dir", str(results), *([] if report else ["--no-report"])]
    return cli(*args, stop_after=stop_after)


def run_here(text: str, results: Path, file_name: str) -> tuple[Runner, str, float]:
    """Campaign `text` through virtbench's runner in this process (the code path of `virtbench
    run`, quiet): (runner, run id, wall seconds of the run). Read it with runner.store."""
    # imported here: the CLI-only scripts need none of the runner's imports
    from rich.console import Console

    from virtbench.campaign import loader
    from virtbench.runner.run import Runner

    runner = Runner(results, Console(quiet=True))
    campaign = loader.parse(text, file_name)
    t0 = time.monotonic()
    run_id = runner.start(campaign)
    return runner, run_id, time.monotonic() - t0


# --- reading a stored run --------------------------------------------------------------
@dataclass(frozen=True)
class CellTime:
    platform: str
    scenario: str
    repetition: int
    status: str
    seconds: float | None  # started_at..finished_at as the runner stored them; None: not both


def cell_seconds(cell: CellRow) -> float | None:
    if cell.started_at is None or cell.finished_at is None:
        return None
    return cell.finished_at - cell.started_at


def latest_run(results: Path) -> tuple[dict[str, Any], list[CellRow]] | None:
    """The latest run stored in `results` and its cells in run order; None when the directory
    has no store or no run."""
    if not (Path(results) / DB_NAME).exists():
        return None
    store = Store.open_existing(results)
    try:
        if not store.runs():
            return None
        run: dict[str, Any] = store.run(store.resolve_run("latest"))
        return run, store.cells(run["run_id"])
    finally:
        store.close()


def cell_times(results: Path) -> list[CellTime]:
    """The latest run's cells in run order; empty when the directory has no store or no run."""
    latest = latest_run(results)
    return [
        CellTime(c.platform, c.scenario, c.repetition, c.status, cell_seconds(c))
        for c in (latest[1] if latest else [])
    ]


def metric_rows(store: Store, run_id: str, metric: str, role: str = "target") -> list[dict]:
    """The run's samples of `metric` by `role` (the workload's own: "target"), in cell order,
    as Store.sample_rows gives them (platform, test_case, value, valid, labels_json, ...)."""
    return [r for r in store.sample_rows(run_id) if r["metric"] == metric and r["role"] == role]


def one_value(store: Store, run_id: str, metric: str, *, valid_only: bool = True) -> float:
    """The first target sample of `metric` in the run (a one-cell run's figure). With
    valid_only, the first valid one: a flagged figure is an error here, never a ratio's part."""
    rows = [r for r in metric_rows(store, run_id, metric) if r["valid"] or not valid_only]
    if not rows:
        raise RuntimeError(f"run {run_id} stored no {'valid ' if valid_only else ''}{metric}")
    return rows[0]["value"]


def run_span(db: Path) -> tuple[float, float]:
    """(started_at, finished_at) epoch seconds of the latest run in the SQLite store `db`."""
    store = Store(db)
    try:
        run: dict[str, Any] = store.run(store.resolve_run("latest"))
    finally:
        store.close()
    return run["started_at"], run["finished_at"]


# --- paired comparisons ----------------------------------------------------------------
def ratios(num: Sequence[float], den: Sequence[float]) -> list[float]:
    """num[i] / den[i] per round: pairs measured seconds apart cancel slow drift in load."""
    return [a / b for a, b in zip(num, den, strict=True)]


def paired_ratio(num: Sequence[float], den: Sequence[float]) -> Summary:
    """Mean of the per-round ratios with its Student-t 95% CI (ci_low, ci_high), n, min, max."""
    return summarize(ratios(num, den))


def cv_pct(values: Sequence[float]) -> float:
    """Coefficient of variation in percent (stdev / |mean|); NaN where it is undefined."""
    cv = summarize(values).cv
    return float("nan") if cv is None else 100 * cv
