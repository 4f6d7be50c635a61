"""Duet runs (`order = "duet"`, Bulej et al. 2020): the two cells of a pair measured at once.

Both platforms are provisioned for the whole run (the pair never runs apart). For each pair
of cells (campaign/rounds.py: one round, test case and scenario, A then B) both cells start
together behind a barrier, each pinned to its CPU set through RunContext.cpus, and each keeps
its own samples. A burst on the host then hits both sides of a round, and the analysis pairs
them by repetition number. Every sample is labelled `duet`: its partner, its CPU set, the
wall-clock window the cell measured in and how much of it the partner covered.

Store writes stay in the calling thread (start, commit, print); the two threads only measure
(Runner._measure_cell). Ctrl-C and SIGTERM arrive in the calling thread while it waits: the
provisioned platforms are torn down (which ends what runs in them) and the threads, daemons,
are abandoned, as the runner does for one cell. A resumed pair whose one cell is already
stored runs that cell again as an unmeasured companion, so the other is still measured beside
its partner.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from contextlib import ExitStack
from typing import TYPE_CHECKING, Any, TypeVar

from ..campaign import rounds
from ..campaign.model import Campaign, Cell
from ..errors import VirtbenchError
from ..platforms.base import Platform
from ..workloads import registry as workload_registry
from . import budget as budget_mod
from . import locks
from .cell import Outcome, cell_id

if TYPE_CHECKING:
    from .run import Runner

T = TypeVar("T")


def together(
    fns: list[Callable[[], T]],
) -> list[tuple[T | None, float, float, BaseException | None]]:
    """Run `fns` in threads that start behind one barrier; each one's (result, start, end,
    exception), start and end in wall-clock seconds (time.time, comparable across cells)."""
    barrier = threading.Barrier(len(fns))
    out: list[Any] = [None] * len(fns)

    def body(i: int, fn: Callable[[], T]) -> None:
        barrier.wait()
        start = time.time()
        try:
            out[i] = (fn(), start, time.time(), None)
        except BaseException as exc:  # noqa: BLE001 - handed back to the caller
            out[i] = (None, start, time.time(), exc)

    threads = [
        threading.Thread(target=body, args=(i, fn), daemon=True, name=f"vb-duet-{i}")
        for i, fn in enumerate(fns)
    ]
    for t in threads:
        t.start()
    for t in threads:
        while t.is_alive():
            t.join(0.2)  # short waits: a signal handler's exception reaches this thread
    return out


def overlap(a: tuple[float, float], b: tuple[float, float]) -> float:
    """The share of window `a` during which window `b` was open too (0..1)."""
    length = a[1] - a[0]
    if length <= 0:
        return 0.0
    return max(0.0, min(a[1], b[1]) - max(a[0], b[0])) / length


def run_pairs(
    runner: Runner, run_id: str, campaign: Campaign, all_cells: list[Cell], todo: list[Cell]
) -> None:
    """Run every pair of `all_cells` that has a cell in `todo`, both platforms provisioned."""
    wanted = {c.seq for c in todo}
    pairs = [p for p in rounds.duet_pairs(all_cells) if any(c.seq in wanted for c in p)]
    if not pairs:
        return
    workloads = workload_registry.load_all()
    specs = {p.name: p for p in campaign.platforms}
    with ExitStack() as stack:
        platforms: dict[str, Platform] = {}
        try:
            for name in rounds.pair(campaign):
                runner.console.print(f"provisioning {name} (duet)")
                budget = stack.enter_context(budget_mod.for_target(specs[name], budget_mod.OWN))
                platforms[name] = stack.enter_context(_provisioned(specs[name], budget))
        except Exception as exc:  # either side failing fails every cell: none has a partner
            stack.close()
            text = str(exc) if isinstance(exc, VirtbenchError) else f"{type(exc).__name__}: {exc}"
            for cell in todo:
                runner._commit(
                    run_id, cell, Outcome("failed", [], [], f"provision: {text}", 0.0), {}
                )
            runner.console.print(f"[red]✗[/] duet: cannot provision: {text}")
            return
        warmed: dict[tuple[str, ...], str | None] = {}
        for pair in pairs:
            _warm(runner, campaign, platforms, pair, warmed, workloads)
            _measure_pair(runner, run_id, campaign, platforms, pair, wanted, warmed, workloads)


def _provisioned(spec, budget):
    from .run import provisioned  # run.py imports this module

    return provisioned(spec, budget)


def _warm(runner, campaign, platforms, pair, warmed, workloads) -> None:
    """The pair's warm-ups, run together like its cells, each on its cell's set."""
    from .run import warmup_key

    scope = campaign.settings.warmup_scope
    fresh = [c for c in pair if (c.platform.name, *warmup_key(c, scope)) not in warmed]
    if not fresh:
        return
    results = together(
        [
            lambda c=c: runner._warmup(
                platforms[c.platform.name], workloads[c.test_case], c, campaign
            )
            for c in fresh
        ]
    )
    for c, (error, _start, _end, exc) in zip(fresh, results, strict=True):
        if exc is not None:
            raise exc
        warmed[(c.platform.name, *warmup_key(c, scope))] = error
        if error is not None:
            runner._warmup_failed(c, scope, str(error))


def _measure_pair(runner, run_id, campaign, platforms, pair, wanted, warmed, workloads) -> None:
    from .run import warmup_key

    for c in pair:
        if c.seq in wanted:
            runner.store.start_cell(cell_id(run_id, c.seq))
    overlapped = set(locks.other_runners())
    results = together(
        [
            lambda c=c: runner._measure_cell(
                platforms[c.platform.name], workloads[c.test_case], c, campaign
            )
            for c in pair
        ]
    )
    for _m, _s, _e, exc in results:
        if exc is not None:
            raise exc  # Ctrl-C in a thread, or a bug outside measure(): not a cell's fault
    windows = [(start, end) for _m, start, end, _x in results]
    for i, (c, (measured, start, end, _x)) in enumerate(zip(pair, results, strict=True)):
        if c.seq not in wanted:
            continue  # a resumed pair's companion: stored already
        assert measured is not None and c.duet is not None
        out = measured[0]
        partner = pair[1 - i] if len(pair) == 2 else None
        partner_out = results[1 - i][0] if len(pair) == 2 else None
        said = {
            "partner": c.duet.partner,
            "cpu_set": c.duet.cpu_set,
            "cpus": ",".join(str(x) for x in c.duet.cpus),
            "start": round(start, 3),
            "end": round(end, 3),
            # the share of this cell's time its partner measured too: below 1 when one side
            # finished early or failed, which the pair's ratio should know
            "overlap": round(overlap(windows[i], windows[1 - i]), 3) if partner else 0.0,
            "partner_status": partner_out[0].status if partner_out else "none",
        }
        for s in out.samples:
            s.labels.setdefault(rounds.DUET_LABEL, said)
        key = (c.platform.name, *warmup_key(c, campaign.settings.warmup_scope))
        runner._finish_cell(
            run_id,
            platforms[c.platform.name],
            c,
            measured,
            set(overlapped),
            campaign.settings.disturbed,
            warmed.get(key),
        )
