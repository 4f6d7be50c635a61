"""Run a campaign: order cells, warm up, repeat, time out, commit each cell, resume, Ctrl-C.

Cells are grouped by platform so each environment is provisioned once per group. Every
finished cell is committed to the store in one transaction; a crash loses at most the cell
in flight, and `--resume` runs exactly the cells not yet finished.
"""

from __future__ import annotations

import itertools
import json
import os
import secrets
import signal
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import asdict
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    Task,
    TextColumn,
)
from rich.text import Text

from .. import __version__, hostfloors, hostinfo, labelkeys, ownedtmp, safefs
from ..analysis import floors
from ..campaign import expand, loader, rounds, select
from ..campaign.model import Adaptive, Campaign, Cell
from ..cgroups import CpuBudget, ThrottleCount
from ..errors import PlatformError, VirtbenchError, WorkloadError
from ..metrics.sampler import Sampler
from ..platforms import registry as platform_registry
from ..platforms.base import NAME_PREFIX, Platform, PlatformSpec
from ..platforms.capabilities import HostTools
from ..results import SOLO_PEAK_SCENARIO
from ..scenarios.base import ScenarioEnv
from ..scenarios.peaks import SoloPeaks
from ..serving import netpath, remote
from ..store.db import CellRow, open_store
from ..store.fallback import FallbackStore
from ..store.stops import Stop
from ..tools import require
from ..workloads import registry as workload_registry
from ..workloads.base import RunContext
from . import adaptive, ceilings, describe, duet, locks, states, validate
from . import budget as budget_mod
from .cell import Outcome, cell_id, flag_disturbed, measure, spec_json
from .peaks import StoredPeaks
from .plan import duration_text


def calibrated_floors(say: Callable[[str], None]) -> dict[str, Any]:
    """The host's A/A floors (`virtbench calibrate --aa`) as a host fact, if fresh."""
    try:
        fact = hostfloors.load()
    except VirtbenchError as exc:  # an unsafe state directory: said, not used
        say(f"A/A floors not used: {exc}")
        return {}
    if fact is None:
        return {}
    age = time.time() - float(fact.get("measured_at") or 0)
    if not 0 <= age <= hostfloors.MAX_AGE_S:
        say(
            f"A/A floors of {fact.get('measured', '?')} are older than"
            f" {hostfloors.MAX_AGE_S // 86400} days: not used (virtbench calibrate --aa)"
        )
        return {}
    return {floors.HOST_FACT: fact}


def warmup_key(cell: Cell, scope: str) -> tuple[str, ...]:
    """What one warm-up serves, within a platform's provisioning: each scenario of a test case
    ("scenario"), or the test case whatever the scenario ("platform")."""
    return (cell.test_case, cell.scenario) if scope == "scenario" else (cell.test_case,)


def new_run_id() -> str:
    return time.strftime("%Y%m%d-%H%M%S") + "-" + secrets.token_hex(2)


def instance_name() -> str:
    """Short (fits a 15-char interface name with a suffix) and prefixed for `cleanup`."""
    return NAME_PREFIX + secrets.token_hex(3)


@contextmanager
def provisioned(spec: PlatformSpec, budget: CpuBudget | None = None) -> Iterator[Platform]:
    """Provision a platform (and the platform it stacks on), tear both down on exit.

    With a shared CPU `budget` (cgroups/budget.py) its host-side processes run inside it: the
    platform's own, or, for a container inside a VM, its VM's."""
    if spec.host is not None:
        with (
            provisioned(spec.host, budget) as host,
            platform_registry.create(spec, instance_name(), host) as p,
        ):
            yield p
        return
    with platform_registry.create(spec, instance_name(), budget=budget) as p:
        if budget is not None and not budget.holds(p.accounting().cgroups):
            raise PlatformError(
                f"platform '{spec.name}' did not make its cgroup inside the shared CPU budget "
                f"{budget.name} (its cgroups: {p.accounting().cgroups or 'none'}); set "
                '[campaign] cpu_budget = "own" to give each environment its own quota'
            )
        yield p


class _EtaColumn(ProgressColumn):
    """ETA from the mean time per finished cell: known from the first cell on (rich's own
    estimate needs several updates, and cells take seconds to minutes)."""

    def render(self, task: Task) -> Text:
        if not task.completed or task.total is None or task.elapsed is None:
            return Text("ETA …")
        left = task.elapsed / task.completed * (task.total - task.completed)
        minutes, seconds = divmod(int(left), 60)
        return Text(f"ETA {minutes}:{seconds:02d}")


class _Interrupted(BaseException):
    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def _on_sigterm(signum, frame):  # noqa: ARG001 - signal handler signature
    raise _Interrupted(signum)


class Runner:
    def __init__(
        self,
        results_dir: Path,
        console: Console | None = None,
        allow_concurrent: bool = False,
        store: str | None = None,
    ) -> None:
        self.results_dir = Path(results_dir)
        self.console = console or Console(emoji=False)
        self.allow_concurrent = allow_concurrent
        # the signal that interrupted the run (SIGINT, SIGTERM), None if it was not: the CLI
        # exits 128 + signal, the shells' convention
        self.interrupted_by: int | None = None
        try:
            safefs.make_dirs(self.results_dir, 0o755)
            safefs.check_results_dir(self.results_dir)  # others could plant symlinks there
            # a probe file of our own: a fresh random name (O_EXCL), never a planted symlink
            fd, probe = ownedtmp.mkstemp("write-test", dir=self.results_dir, hidden=True)
            os.close(fd)
            os.unlink(probe)
        except OSError as exc:
            raise VirtbenchError(
                f"results directory {self.results_dir} is not writable: {exc.strerror}"
            ) from exc
        # the store (default RESULTS_DIR/virtbench.db); a shared one has a local way out
        opened = open_store(store, self.results_dir, create=True)
        self.store = (
            FallbackStore(opened, self.results_dir, self._store_warning)
            if opened.shared
            else opened
        )
        self.peaks: SoloPeaks = SoloPeaks()  # the solo peaks of the run being executed
        self._remote: remote.RemoteClient | None = None  # the campaign's client host
        self._remote_opened = False

    def _store_warning(self, message: str) -> None:
        self.console.print(Text.assemble(("warning:", "yellow"), " ", message))

    # --- entry points -------------------------------------------------------------------
    def start(
        self, campaign: Campaign, repetitions: int | str | None = None, seed: int | None = None
    ) -> str:
        """`repetitions`: a number, "auto" (adaptive), or None (the campaign's)."""
        cells, plan, repetitions, seed = planned_cells(campaign, repetitions, seed)
        self._preflight(campaign, cells)
        run_id = new_run_id()
        with self._held(run_id):  # held before the run exists: never seen running unheld
            return self._start(run_id, campaign, cells, repetitions, seed, plan)

    def _start(
        self,
        run_id: str,
        campaign: Campaign,
        cells: list[Cell],
        repetitions: int | None,
        seed: int | None,
        plan: Adaptive | None = None,
    ) -> str:
        settings = asdict(campaign.settings) | {
            "repetitions": repetitions or campaign.settings.repetitions,
            "seed": seed,
            "adaptive": asdict(plan) if plan else None,
        }
        self.store.create_run(
            run_id,
            campaign.name,
            campaign.file,
            campaign.text,
            seed,
            hostinfo.facts(
                tools_used=describe.tools_used(c.test_case for c in cells),
                extra=ceilings.facts(cells, lambda m: self.console.print(escape(m)))
                | calibrated_floors(lambda m: self.console.print(escape(m)))
                | describe.platform_facts(c.platform for c in cells),
            ),
            settings,
            __version__,
            description=describe.describe(c.test_case for c in cells),
        )
        self._add_cells(run_id, cells)
        self.console.print(
            Text.assemble(
                "run ",
                (run_id, "bold"),
                " campaign ",
                (campaign.name, "bold"),
                f": {len(cells)} cells (order {campaign.settings.order}{_seed_text(seed)})"
                f" -> {self.store.path}",
            )
        )
        if plan is not None:
            self.console.print(Text(adaptive.plan_text(plan, len(campaign.tests))))
        return self._execute(run_id, campaign, cells, cells, plan, seed)

    def _add_cells(self, run_id: str, cells: list[Cell]) -> None:
        self.store.add_cells(
            (
                cell_id(run_id, c.seq),
                run_id,
                c.seq,
                c.platform.name,
                spec_json(c.platform),
                c.suite,
                c.test_case,
                c.scenario,
                c.repetition,
                json.dumps({labelkeys.PARAMS: c.params}),
            )
            for c in cells
        )

    def resume(self, run_id: str) -> str:
        run_id = self.store.resolve_run(run_id)
        with self._held(run_id):
            return self._resume(run_id)

    def _held(self, run_id: str) -> ExitStack:
        """This run for this runner alone, and this host for this run unless concurrent
        runs are allowed."""
        stack = ExitStack()
        try:
            stack.enter_context(locks.hold_run(self.results_dir, run_id))
            stack.enter_context(locks.hold_host(self.allow_concurrent))
        except BaseException:
            stack.close()
            raise
        return stack

    def _resume(self, run_id: str) -> str:
        # we hold the run: whatever is still marked running lost its runner
        if self.store.settle_cells(run_id, "running", states.LOST):
            self.console.print("cells left running by a runner that is gone are marked lost")
        run = self.store.run(run_id)
        if run["status"] == "running":
            self.store.set_run_status(run_id, states.LOST)
            run = self.store.run(run_id)
        if run["status"] in (states.LOST, states.INTERRUPTED):
            self.console.print(
                Text(f"run {run_id} was {run['status']} at {states.when(run['finished_at'])}")
            )
        settings = json.loads(run["settings_json"])
        campaign = select.apply(
            loader.parse(run["campaign_text"], run["campaign_file"]), settings.get("selection")
        )
        plan = Adaptive(**settings["adaptive"]) if settings.get("adaptive") else None
        stored = self.store.cells(run_id)
        if settings.get("duet_cpus"):  # the sets the run started with, not this host's halves
            campaign.settings.duet_cpus = settings["duet_cpus"]
        if plan is None:
            cells = expand.expand(campaign, settings["repetitions"], settings["seed"])
        else:  # the rounds added so far are in the store only
            measured = [r for r in stored if r.scenario != SOLO_PEAK_SCENARIO]
            cells = expand.rebuild(
                campaign,
                [(r.seq, r.platform, r.test_case, r.scenario, r.repetition) for r in measured],
            )
        _check_same_cells(run, stored, cells)
        done = {r.seq for r in stored if r.status in states.DONE}
        todo = [c for c in cells if c.seq not in done]
        self._preflight(campaign, todo)
        self.console.print(
            Text.assemble(
                "resuming run ", (run_id, "bold"), f": {len(done)} cells done, {len(todo)} to run"
            )
        )
        self.store.set_run_status(run_id, "running")
        if plan is not None:
            self.console.print(Text(adaptive.plan_text(plan, len(campaign.tests))))
        return self._execute(run_id, campaign, cells, todo, plan, settings["seed"])

    # --- internals ----------------------------------------------------------------------
    def _preflight(self, campaign: Campaign, cells: list[Cell]) -> None:
        """Fail before measuring anything if a needed tool is missing on the host."""
        workloads = workload_registry.load_all()
        self._client(campaign)  # a client host that cannot be reached fails here
        for cell in cells:
            w = workloads[cell.test_case]
            require(w.host_tools, needed_by=w.name)
            kind = platform_registry.get(cell.platform.type)
            if issubclass(kind, HostTools) and kind.host_tools():
                require(w.tools, needed_by=w.name)

    def _execute(
        self,
        run_id: str,
        campaign: Campaign,
        all_cells: list[Cell],
        todo: list[Cell],
        plan: Adaptive | None = None,
        seed: int | None = None,
    ) -> str:
        old_term = signal.signal(signal.SIGTERM, _on_sigterm)
        status = "failed"
        failure: VirtbenchError | None = None
        unrecorded: str | None = None  # why the run's end could not be written, if it could not
        # measured once per run, stored as cells of their own, read back on --resume
        self.peaks = StoredPeaks(self.store, run_id, self._print)
        try:
            self._run_cells(run_id, campaign, all_cells, todo)
            if plan is not None:
                self._adapt(run_id, campaign, plan, seed)
            status = "finished"
        except (KeyboardInterrupt, _Interrupted) as exc:
            status = "interrupted"
            self.interrupted_by = getattr(exc, "signum", signal.SIGINT)
            self.console.print(
                Text.assemble(
                    ("interrupted", "yellow"),
                    ": environments torn down; finished cells are kept."
                    f" Continue with: virtbench run --resume {run_id}",
                )
            )
        except VirtbenchError as exc:
            failure = exc  # e.g. the results directory filled up: said below, once recorded
        finally:
            signal.signal(signal.SIGTERM, old_term)
            try:
                netpath.close()  # the load generators' netns (client_path = bridge), if made
            except Exception as exc:  # noqa: BLE001 - said; `virtbench cleanup` removes it
                self.console.print(
                    Text.assemble(("could not remove the client netns:", "red"), f" {exc}")
                )
            try:
                if status != "finished":  # the cell in flight when it stopped
                    self.store.settle_cells(run_id, "running", states.INTERRUPTED)
                self._validate(run_id)
                self.store.set_run_status(run_id, status)
            except VirtbenchError as exc:
                unrecorded = str(exc)
                self.console.print(
                    Text.assemble(("could not record run status:", "red"), f" {exc}")
                )
        if failure is not None:
            raise VirtbenchError(self._stopped(run_id, failure, unrecorded)) from failure
        return run_id

    def _stopped(self, run_id: str, failure: VirtbenchError, unrecorded: str | None) -> str:
        """What a run stopped by an error left in the store, said as it is: a store that
        could not be written (full, made read-only) still marks the cell in flight running."""
        try:
            kept = f"{sum(1 for c in self.store.cells(run_id) if c.status in states.DONE)}"
        except VirtbenchError:
            kept = "the"
        resume = f"Fix the cause, then: virtbench run --resume {run_id}"
        if unrecorded is None:
            return (
                f"{failure}. The run stopped cleanly; {kept} finished cells are kept in"
                f" {self.store.path}. {resume}"
            )
        return (
            f"{failure}. The run stopped, and its end could not be written to"
            f" {self.store.path} ({unrecorded}): the cell in flight is still marked running"
            f" there and the run will be listed as lost; {kept} finished cells committed"
            f" before are kept. {resume} (the unfinished cells run again)"
        )

    def _validate(self, run_id: str) -> None:
        """Cross-sample checks, written to the store before any report reads the run."""
        try:
            flagged = validate.flag_implausible(self.store, run_id)
        except VirtbenchError as exc:
            self.console.print(Text.assemble(("could not check the samples:", "red"), f" {exc}"))
            return
        if flagged:
            reasons = sorted(set(flagged.values()))
            self.console.print(
                Text.assemble(
                    (f"{len(flagged)} samples flagged invalid", "yellow"),
                    f": {reasons[0]}",
                    f" (+{len(reasons) - 1} more reasons)" if len(reasons) > 1 else "",
                )
            )

    def _run_cells(
        self, run_id: str, campaign: Campaign, all_cells: list[Cell], todo: list[Cell]
    ) -> None:
        if campaign.settings.order == rounds.DUET:  # both platforms at once, runner/duet.py
            duet.run_pairs(self, run_id, campaign, all_cells, todo)
            return
        workloads = workload_registry.load_all()
        # one provisioned environment per run of consecutive cells on the same platform
        groups = [list(g) for _, g in itertools.groupby(todo, key=lambda c: c.platform.name)]
        columns = (
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            _EtaColumn(),
        )
        started, done = time.monotonic(), 0
        with Progress(*columns, console=self.console, transient=True) as progress:
            task = progress.add_task("starting", total=len(todo))
            for cells in groups:
                spec = cells[0].platform
                platform_name = spec.name
                progress.update(task, description=escape(f"provisioning {platform_name}"))
                # the target's CPU budget, shared by the neighbours of its co-location cells;
                # removed after the target (the stack unwinds on errors and Ctrl-C too)
                cm = ExitStack()
                try:
                    budget = cm.enter_context(
                        budget_mod.for_target(spec, _budget_mode(campaign, cells))
                    )
                    platform = cm.enter_context(provisioned(spec, budget))
                except BaseException as exc:  # any provisioning failure fails this group only
                    cm.close()  # the budget too, also on Ctrl-C
                    if not isinstance(exc, Exception):
                        raise
                    if not isinstance(exc, VirtbenchError):
                        exc = f"{type(exc).__name__}: {exc}"
                    for cell in cells:
                        failed = Outcome("failed", [], [], f"provision: {exc}", 0.0)
                        self._commit(run_id, cell, failed, {})
                        done += 1
                        progress.advance(task)
                    self.console.print(
                        Text.assemble(("✗", "red"), f" {platform_name}: cannot provision: {exc}")
                    )
                    continue
                try:
                    # warm-up key -> its error, None if it went well
                    warmed: dict[tuple[str, ...], str | None] = {}
                    for cell in cells:
                        progress.update(
                            task,
                            description=escape(
                                f"{cell.platform.name} · {cell.test_case} · "
                                f"{cell.scenario} · rep {cell.repetition}"
                            ),
                        )
                        scope = campaign.settings.warmup_scope
                        key = warmup_key(cell, scope)
                        if key not in warmed:
                            warmed[key] = self._warmup(
                                platform, workloads[cell.test_case], cell, campaign
                            )
                            if warmed[key] is not None:
                                self._warmup_failed(cell, scope, str(warmed[key]))
                        self._run_cell(
                            run_id,
                            platform,
                            workloads[cell.test_case],
                            cell,
                            campaign,
                            warmup_error=warmed[key],
                            at=lambda n=done + 1: _position(n, len(todo), started),
                        )
                        done += 1
                        progress.advance(task)
                finally:
                    cm.__exit__(None, None, None)

    def _adapt(self, run_id: str, campaign: Campaign, plan: Adaptive, seed: int | None) -> None:
        """Rounds after the first ones, until every test case has stopped (and said why)."""
        stopped = {s.test_case for s in self.store.run_stops(run_id)}
        active = [t.test_case for t in campaign.tests if t.test_case not in stopped]
        while active:
            decisions = adaptive.assess(self.store, run_id, plan, active)
            for d in decisions:
                color = "green" if d.reason == adaptive.PRECISION else "yellow"
                mark = ("■", color) if d.stopped else "·"
                self.console.print(Text.assemble(mark, " ", d.text(plan)))
                if d.stopped:
                    assert d.reason is not None
                    stop = Stop(
                        d.test_case,
                        d.reason,
                        d.repetitions,
                        d.worst_pct,
                        d.worst,
                        d.spent_s,
                        d.text(plan),
                    )
                    self.store.record_stop(run_id, stop)
            reps = {d.test_case: d.repetitions + 1 for d in decisions if not d.stopped}
            active = list(reps)
            if not reps:
                break
            first = max((r.seq for r in self.store.cells(run_id)), default=-1) + 1
            cells = expand.extra_round(campaign, reps, first, seed)
            self._add_cells(run_id, cells)
            self.console.print(
                f"adaptive round: repetition {max(reps.values())} for {len(reps)} test"
                f" case(s) still going on, {len(cells)} cells"
            )
            self._run_cells(run_id, campaign, cells, cells)
        counts = {r: 0 for r in adaptive.REASONS}
        for s in self.store.run_stops(run_id):
            counts[s.reason] = counts.get(s.reason, 0) + 1
        self.console.print(
            "adaptive repetitions: "
            + ", ".join(f"{n} stopped on {r}" for r, n in counts.items() if n)
        )

    def _client(self, campaign: Campaign) -> remote.RemoteClient | None:
        """The campaign's client host (serving/remote.py), opened once per run."""
        if not self._remote_opened:
            self._remote = remote.open_client(campaign.settings, campaign.file)
            self._remote_opened = True
        return self._remote

    def _context(self, cell: Cell, campaign: Campaign) -> RunContext:
        client = self._client(campaign)
        return RunContext(
            remote=remote.CellClient(client) if client is not None else None,
            params=cell.params,
            timeout=campaign.settings.cell_timeout,
            cpus=list(cell.duet.cpus) if cell.duet else campaign.settings.target_cpus,
            client_cpus=campaign.settings.client_cpus,
            log=lambda msg: self.console.log(Text(str(msg))),
        )

    def _scenario_env(
        self,
        platform: Platform,
        workload,
        ctx: RunContext,
        campaign: Campaign | None = None,
        sampler: Sampler | None = None,
    ) -> ScenarioEnv:
        specs = {p.name: p for p in campaign.platforms} if campaign else {}
        return ScenarioEnv(
            target=platform,
            workload=workload,
            ctx=ctx,
            new_platform=_neighbour,
            platforms=specs,
            sampler=sampler or Sampler(),  # warm-ups sample nothing
            solo_peaks=self.peaks,
            budget=platform.cpu_budget(),
            budget_facts=budget_mod.facts(platform.cpu_budget(), platform.spec),
        )

    def _warmup(self, platform: Platform, wcls, cell: Cell, campaign: Campaign) -> str | None:
        """The unmeasured runs before the cells they serve; the error of the first that
        failed, None if all went well. A failure does not stop the cells (the measured run
        says for itself whether it works), but they are labelled with it: they were measured
        on a target whose warm-up failed, so possibly cold or left in a bad state."""
        for _ in range(campaign.settings.warmup):
            ctx = self._context(cell, campaign)
            try:
                cell.parsed_scenario.run(self._scenario_env(platform, wcls(), ctx, campaign))
            except (WorkloadError, VirtbenchError) as exc:
                return str(exc)
            except Exception as exc:  # noqa: BLE001 - a bug in a warm-up must not lose the run
                return f"internal error: {exc!r}"
        return None

    def _warmup_failed(self, cell: Cell, scope: str, error: str) -> None:
        served = "its scenarios" if scope == "platform" else cell.scenario
        first = error.strip().splitlines()[0] if error.strip() else error
        self.console.print(
            Text.assemble(
                ("warm-up failed", "yellow"),
                f" {cell.platform.name} {cell.test_case} ({served}): {first}; its cells are"
                " measured anyway and labelled warmup.failed",
            )
        )

    def _run_cell(
        self,
        run_id: str,
        platform: Platform,
        wcls,
        cell: Cell,
        campaign: Campaign,
        warmup_error: str | None = None,
        at: Callable[[], tuple[str, str]] | None = None,
    ) -> None:
        """`at`: says where the run is ("[3/12] ", "ETA 1:05") once the cell is done."""
        self.store.start_cell(cell_id(run_id, cell.seq))
        overlapped = set(locks.other_runners())
        measured = self._measure_cell(platform, wcls, cell, campaign)
        self._finish_cell(
            run_id,
            platform,
            cell,
            measured,
            overlapped,
            campaign.settings.disturbed,
            warmup_error,
            at,
        )

    def _measure_cell(
        self, platform: Platform, wcls, cell: Cell, campaign: Campaign
    ) -> tuple[Outcome, RunContext, ThrottleCount]:
        """The measurement alone, touching no store: runner/duet.py runs two at once."""
        ctx = self._context(cell, campaign)
        scenario = cell.parsed_scenario
        throttled = ThrottleCount(platform.cpu_budget())
        out = measure(
            platform,
            ctx,
            lambda c, sampler: scenario.run(
                self._scenario_env(platform, wcls(), c, campaign, sampler)
            ),
        )
        return out, ctx, throttled

    def _finish_cell(
        self,
        run_id: str,
        platform: Platform,
        cell: Cell,
        measured: tuple[Outcome, RunContext, ThrottleCount],
        overlapped: set[str],
        disturbed_policy: str,
        warmup_error: str | None = None,
        at: Callable[[], tuple[str, str]] | None = None,
    ) -> None:
        """Label a measured cell's samples, commit it, print its line. `disturbed_policy`:
        the campaign's `disturbed` (what a disturbed cell's samples become)."""
        out, ctx, throttled = measured
        labels = {labelkeys.PARAMS: cell.params, labelkeys.PLATFORM: platform.labels()}
        if warmup_error is not None:  # said with the cell: the report and export show it
            labels[labelkeys.WARMUP] = {"failed": warmup_error}
        if cell.round_position is not None:  # where its platform ran in its round
            for s in out.samples:
                s.labels.setdefault(rounds.ROUND_POSITION_LABEL, cell.round_position)
        # the CPU budget the target ran in and how often it ran out: a solo's own throttling
        # is the reference for a pair's (co-location scenarios say more: neighbours, the scene)
        said = budget_mod.facts(throttled.budget, cell.platform)
        budget_labels = (said.labels() if said is not None else {}) | throttled.labels()
        for s in out.samples:
            for key, value in budget_labels.items():
                s.labels.setdefault(key, value)
        client = getattr(ctx, "remote", None)
        if client is not None and client.facts:  # clock offset, RTT to the target
            labels[labelkeys.CLIENT] = client.facts
        # another tenant's bursts: flagged (and by default invalid) past the thresholds
        disturbed = flag_disturbed(out.samples, out.disturbance, disturbed_policy)
        overlapped.update(locks.other_runners())
        if overlapped:  # another run loaded this host while the cell measured
            for s in out.samples:
                s.labels[labelkeys.OVERLAPPED_RUNS] = ",".join(sorted(overlapped))
        self._commit(run_id, cell, out, labels)
        where = f"{cell.platform.name} {cell.test_case} {cell.scenario} #{cell.repetition}"
        if warmup_error is not None:
            where += " (after a failed warm-up)"
        if disturbed is not None:
            where += f" (disturbed: {disturbed})"
        self._print(where, cell.test_case, out, at() if at else ("", ""))

    def _commit(self, run_id: str, cell: Cell, out: Outcome, labels) -> None:
        self.store.finish_cell(
            run_id,
            cell_id(run_id, cell.seq),
            out.status,
            out.samples,
            out.series,
            out.error,
            labels or None,
        )

    def _print(
        self, where: str, test_case: str, out: Outcome, at: tuple[str, str] = ("", "")
    ) -> None:
        """One line per cell: `[n/N] ✓ where: value (time, ETA)`, whole lines a pipe or log
        keeps (the live bar is the terminal's only)."""
        # tool output and error text are printed literally (Text), never as rich markup
        samples = out.samples
        position, eta = at[0], f", {at[1]}" if at[1] else ""
        if out.status != "ok" or not samples:
            self.console.print(
                Text.assemble(
                    position,
                    ("✗", "red"),
                    f" {where}: {out.status}: {out.error}",
                    f" ({at[1]})" if at[1] else "",
                )
            )
            return
        wcls = workload_registry.WORKLOADS[test_case]
        head = next((s for s in samples if s.metric == wcls.primary().name), samples[0])
        invalid = head.labels.get(labelkeys.INVALID)
        self.console.print(
            Text.assemble(
                position,
                ("✓", "green"),
                f" {where}: {head.value:.6g} {head.unit}",
                (f" (invalid: {invalid})", "yellow") if invalid else "",
                f" ({out.elapsed_s:.1f}s{eta})",
            )
        )


def _params_text(params: dict) -> dict:
    """Params as the store gives them back (JSON), so stored and expanded ones compare."""
    return json.loads(json.dumps(params, sort_keys=True, default=str))


def _check_same_cells(run: dict, stored: list[CellRow], cells: list[Cell]) -> None:
    """A resume matches cells to stored rows by number: refuse when this code expands the
    stored campaign into other cells (a test case added to or gone from a suite that selects
    all of them, a changed parameter default). Else a cell's samples would be committed into
    another cell's row, a stored cell never run, or two parameter sets pooled in one group."""
    want = {r.seq: r for r in stored if r.scenario != SOLO_PEAK_SCENARIO}
    got = {c.seq: c for c in cells}
    for seq in sorted(want.keys() | got.keys()):
        r, c = want.get(seq), got.get(seq)
        was = f"{r.platform} {r.test_case} {r.scenario} #{r.repetition}" if r else "nothing"
        now = f"{c.platform.name} {c.test_case} {c.scenario} #{c.repetition}" if c else "nothing"
        if was == now and r is not None and c is not None:
            old = r.labels.get(labelkeys.PARAMS)
            if old is None or _params_text(old) == _params_text(c.params):
                continue
            new = _params_text(c.params)
            changed = sorted(k for k in old.keys() | new.keys() if old.get(k) != new.get(k))
            was = f"{was} with " + ", ".join(f"{k}={old.get(k)}" for k in changed)
            now = f"{now} with " + ", ".join(f"{k}={new.get(k)}" for k in changed)
        raise VirtbenchError(
            f"run {run['run_id']} cannot be resumed by this code: its campaign now expands into"
            f" other cells than the run stored (cell {seq}: stored {was}, now {now}); resume"
            f" it with the code that started it (virtbench {run.get('virtbench_version')})"
        )


def _seed_text(seed: int | None) -> str:
    """ ", seed N" when the order has one (random order, or --seed); nothing otherwise."""
    return "" if seed is None else f", seed {seed}"


def _position(n: int, total: int, started: float) -> tuple[str, str]:
    """("[n/N] ", "ETA m:ss") after the n-th of `total` cells, the ETA from the mean time per
    cell so far (as the live bar's)."""
    left = (time.monotonic() - started) / n * (total - n)
    return f"[{n}/{total}] ", (f"ETA {duration_text(left)}" if n < total else "")


def planned_cells(
    campaign: Campaign, repetitions: int | str | None = None, seed: int | None = None
) -> tuple[list[Cell], Adaptive | None, int | None, int | None]:
    """The cells a new run starts with (an adaptive run: its first rounds), its adaptive
    plan, fixed repetitions and seed: what `start` runs and `run --dry-run` shows."""
    seed = seed if seed is not None else campaign.settings.seed
    plan = _adaptive_plan(campaign, repetitions)
    # every order that draws from a seed records one: the run is reproduced and resumed in
    # the same order (header and store show it)
    if seed is None and expand.uses_seed(campaign.settings.order, plan is not None):
        seed = secrets.randbelow(2**31)
    if plan is not None:
        repetitions = plan.min_repetitions
    assert not isinstance(repetitions, str)
    return expand.expand(campaign, repetitions, seed), plan, repetitions, seed


def _adaptive_plan(campaign: Campaign, repetitions: int | str | None) -> Adaptive | None:
    """--repetitions auto asks for the campaign's plan (defaults if it has none); a number
    overrides an adaptive campaign with fixed repetitions."""
    if repetitions == loader.AUTO:
        return campaign.settings.adaptive or Adaptive()
    if repetitions is None:
        return campaign.settings.adaptive
    return None


def _budget_mode(campaign: Campaign, cells: list[Cell]) -> str:
    """The campaign's `cpu_budget` for a group of cells on one target, "own" for a group
    without co-location cells: nothing would share the budget, and a budget's environments
    get no real-time bandwidth (cgroups/budget.py), which the latency suite needs."""
    if any(getattr(c.parsed_scenario, "shares_cpu_budget", False) for c in cells):
        return campaign.settings.cpu_budget
    return budget_mod.OWN


@contextmanager
def _neighbour(
    spec: PlatformSpec, role: str, budget: CpuBudget | None = None
) -> Iterator[Platform]:
    with provisioned(spec, budget) as p:
        yield p
