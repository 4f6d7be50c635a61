"""Command line: parse, validate, print. No measurement logic lives here."""

from __future__ import annotations

import errno
import json
import math
import os
import sqlite3
import sys
from pathlib import Path

import click
from rich.console import Console
from rich.text import Text

from . import __version__, cli_output, pychild
from .cli_output import Rows, emit, format_option, stdout_gone, trace_commands
from .errors import NeedsRootError, VirtbenchError
from .parsing import printable

# markup=False: nothing a user types (a campaign name, a path, a run id like `x[/]`) is ever
# rich markup; colour comes from Text styles (_mark). Long lines stay whole in logs and pipes.
console = Console(soft_wrap=True, emoji=False, markup=False)
err_console = Console(stderr=True, soft_wrap=True, emoji=False, markup=False)  # one line each

DEFAULT_RESULTS = Path(os.environ.get("VIRTBENCH_RESULTS", "results"))
results_dir_option = click.option(
    "--results-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=DEFAULT_RESULTS,
    show_default=True,
    help="directory holding the results store (virtbench.db) and reports",
)
store_option = click.option(
    "--store",
    envvar="VIRTBENCH_STORE",
    metavar="URL|FILE",
    help="the results store: postgresql://USER[:PASSWORD]@HOST[:PORT]/DB (shared by many"
    " hosts) or a SQLite file; default: RESULTS_DIR/virtbench.db  [env: VIRTBENCH_STORE]",
)
EXIT_STORE_FALLBACK = 5  # run: finished, but the shared store went away; import the fallback


class FiniteRange(click.FloatRange):
    """A number in a closed range; nan (which every comparison lets through) is refused."""

    def convert(self, value, param, ctx):
        number = super().convert(value, param, ctx)
        if not math.isfinite(number):
            self.fail(
                f"{value!r} is not a finite number; allowed: {self.min}..{self.max}", param, ctx
            )
        return number


class Repetitions(click.ParamType):
    """1..1000, or "auto" (adaptive repetitions)."""

    name = "repetitions"

    def convert(self, value, param, ctx):
        if value == "auto" or isinstance(value, int):
            return value
        try:
            return click.IntRange(1, 1000).convert(value, param, ctx)
        except click.BadParameter:
            self.fail(f"{value!r} is not an integer 1..1000 or 'auto'", param, ctx)


class _Cli(click.Group):
    def invoke(self, ctx: click.Context):
        # click's own handler of a closed stdout exits 1; a reader that stopped reading
        # (`virtbench doctor | head -1`) is not an error
        try:
            return super().invoke(ctx)
        except BrokenPipeError:
            stdout_gone()


@click.group(cls=_Cli, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "-V", "--version", prog_name="virtbench")
@click.option(
    "-q", "--quiet", is_flag=True, help="print only results and errors (no progress or notes)"
)
@click.option(
    "-v", "--verbose", is_flag=True, help="also print every command virtbench runs (+ argv, stderr)"
)
def cli(quiet: bool, verbose: bool) -> None:
    """virtbench: what virtualization and co-located neighbours cost a workload."""
    if quiet and verbose:
        raise click.UsageError("-q/--quiet and -v/--verbose exclude each other")
    console.quiet = quiet
    err_console.quiet = False  # errors are always said
    trace_commands(_trace_line if verbose else None)


def _trace_line(text: str) -> None:
    err_console.print(Text(text, style="dim"))


@cli.command()
@click.argument("campaign", required=False)
@results_dir_option
@store_option
@click.option(
    "--repetitions",
    type=Repetitions(),
    metavar="N|auto",
    help="override campaign repetitions; auto: repeat until precise (the campaign's"
    " precision_pct, min/max_repetitions and budget_s, or their defaults)",
)
@click.option("--resume", "resume_id", metavar="RUN_ID", help="continue an interrupted run")
@click.option("--seed", type=click.IntRange(0, 2**31 - 1), help="seed for randomized cell order")
@click.option("--no-report", is_flag=True, help="do not write the report at the end")
@click.option(
    "--allow-concurrent",
    is_flag=True,
    help="measure even while another virtbench run measures on this host (samples of cells"
    " that overlapped it are labelled overlapped_runs)",
)
@click.option("--platforms", "only_platforms", metavar="A,B", help="run only these platforms")
@click.option("--suites", "only_suites", metavar="X,Y", help="run only these suites")
@click.option("--test-cases", "only_test_cases", metavar="T1,T2", help="run only these test cases")
@click.option(
    "--dry-run",
    is_flag=True,
    help="print the cells per platform, suite and scenario and an estimated time (from the"
    " store's past cells of the same platform and test case); measure nothing",
)
def run(
    campaign,
    results_dir,
    store,
    repetitions,
    resume_id,
    seed,
    no_report,
    allow_concurrent,
    only_platforms,
    only_suites,
    only_test_cases,
    dry_run,
) -> None:
    """Run CAMPAIGN (a .toml file or a built-in name; default: quick).

    \b
    Exit status:
      0    the run finished (cells that failed or timed out are recorded, not an error)
      1    internal error (a bug: please report the traceback)
      2    error you can fix: bad campaign or option, unknown run, run held by another
           runner, another run measuring on this host, store not writable
      5    the run finished, but its shared store went away mid-run: the cells since are
           in RESULTS_DIR/fallback-RUN_ID.db; push them with virtbench import
      130  interrupted by SIGINT (Ctrl-C); 143: by SIGTERM. Torn down, finished cells kept:
           continue with --resume RUN_ID
    """
    from . import watchdog
    from .campaign import loader, select
    from .runner.run import Runner
    from .store.db import open_store

    # validate before creating anything: a bad campaign or an unknown run leaves no results
    # directory or empty store behind
    selection = {
        "platforms": select.split(only_platforms),
        "suites": select.split(only_suites),
        "test_cases": select.split(only_test_cases),
    }
    if resume_id:
        if campaign:
            raise VirtbenchError("give either CAMPAIGN or --resume RUN_ID, not both")
        if any(selection.values()) or dry_run:
            raise VirtbenchError(
                "--resume runs what its run chose; --platforms, --suites, --test-cases and"
                " --dry-run go with a CAMPAIGN"
            )
        open_store(store, results_dir).close()
    else:
        loaded = select.apply(loader.load(campaign), selection)
        if dry_run:
            _dry_run(loaded, repetitions, seed, store, results_dir)
            return
    runner = Runner(results_dir, console, allow_concurrent=allow_concurrent, store=store)
    # a SIGKILLed virtbench skips its teardown: the watchdog removes what it left running
    with watchdog.guard():
        run_id = runner.resume(resume_id) if resume_id else runner.start(loaded, repetitions, seed)
    if not no_report:
        _report(runner.store, run_id, _store_dir(store, results_dir))
    fallback_note = getattr(runner.store, "note", None)  # the shared store went away
    if fallback_note:
        err_console.print(_mark("warning:", "yellow"), Text(fallback_note))
    if runner.interrupted_by is not None:
        sys.exit(128 + runner.interrupted_by)  # the shells' convention: 130 SIGINT, 143 SIGTERM
    if fallback_note:
        sys.exit(EXIT_STORE_FALLBACK)


def _dry_run(campaign, repetitions, seed, store: str | None, results_dir: Path) -> None:
    """The plan of a run of `campaign`, timed from the store's history; creates nothing."""
    from .runner import plan
    from .runner.run import planned_cells
    from .store.db import open_store

    cells, adaptive, reps, seed = planned_cells(campaign, repetitions, seed)
    try:
        db = open_store(store, results_dir, read=True)
    except VirtbenchError:  # no store yet: nothing to estimate from
        history: dict = {}
    else:
        history = db.cell_durations()
        db.close()
    rows = plan.rows(cells, history, campaign.settings.warmup)
    table = Rows(("platform", "suite", "scenario", "cells", "estimated time"))
    for r in [*rows, plan.total(rows)]:
        table.add_row(r.platform, r.suite, r.scenario, r.cells, r.estimate())
    what = f"{reps or campaign.settings.repetitions} repetitions" + (
        f" (adaptive: the first rounds; up to {adaptive.max_repetitions})" if adaptive else ""
    )
    say(
        f"dry run of campaign {campaign.name}: {len(cells)} cells, {what}; times from past"
        " cells of the same platform and test case, warm-ups included, provisioning not"
    )
    table.print(None)


def say(message: object) -> None:
    """Print text literally: tool output and paths may contain [brackets] rich would eat."""
    console.print(Text(printable(str(message), allow="\n\t")))


def _mark(text: str, style: str) -> Text:
    """A coloured word of ours (error:, note:, ✓) beside literal text."""
    return Text(text, style=style)


def _note(message: str) -> None:
    """A note on stderr (what was read, why an export is short); --quiet drops it."""
    if not console.quiet:
        err_console.print(_mark("note:", "yellow"), Text(printable(message, allow="\n\t")))


@cli.command("list")
@click.argument(
    "what", type=click.Choice(["platforms", "suites", "workloads", "scenarios", "campaigns"])
)
@format_option()
def list_(what: str, fmt: str | None) -> None:
    """List what exists, with one-line descriptions."""
    table = Rows()
    if what == "platforms":
        from .platforms import registry

        table.add_column("platform"), table.add_column("description"), table.add_column("options")
        for kind, cls in sorted(registry.load_all().items()):
            opts = ", ".join(
                f"{k}={_option_values(d, a)}" for k, (d, a, _h) in cls.options_schema.items()
            )
            table.add_row(kind, cls.description, opts)
    elif what in ("suites", "workloads"):
        from .suites import SUITES
        from .workloads import registry

        registry.load_all()
        if what == "suites":
            (
                table.add_column("suite"),
                table.add_column("description"),
                table.add_column("test cases"),
            )
            for suite in SUITES.values():
                names = [w.name for w in registry.by_suite(suite.name)]
                if names:
                    table.add_row(suite.name, suite.description, ", ".join(names))
        else:
            for col in ("test case", "suite", "metric (unit, better)", "tools", "description"):
                table.add_column(col)
            for w in sorted(registry.WORKLOADS.values(), key=lambda w: (w.suite, w.name)):
                m = w.primary()
                table.add_row(
                    w.name,
                    w.suite,
                    f"{m.name} ({m.unit}, {'higher' if m.higher_is_better else 'lower'})",
                    " ".join(w.tools),
                    w.description,
                )
    elif what == "scenarios":
        from .scenarios import registry

        table.add_column("scenario"), table.add_column("description")
        for cls in registry.load_all().values():
            table.add_row(cls.usage, cls.description)
    else:
        from .campaign import loader

        for col in ("campaign", "description", "file"):
            table.add_column(col)
        for name in loader.builtin_names():
            path = loader.builtin_path(name)
            table.add_row(name, loader.summary(path), str(path))
    table.print(fmt)


def _option_values(default: object, allowed: tuple | list | None) -> str:
    """An option's allowed values (a|b|c), else its default as a user writes it in TOML;
    "unset" where it has none (never Python's None)."""
    if allowed:
        return "|".join(map(str, allowed))
    if default is None:
        return "unset"
    if isinstance(default, bool):
        return "true" if default else "false"
    if isinstance(default, str):
        return f'"{default}"'
    return json.dumps(default, default=str)


@cli.command()
@format_option()
def doctor(fmt: str | None) -> None:
    """What this host can do, and the package that provides each missing piece."""
    from .doctor import checks

    found = checks()
    if fmt:
        rows = Rows(("check", "status", "detail", "fix"))
        for check in found:
            rows.add_row(check.name, check.status, check.detail, check.fix or "")
        rows.print(fmt)
        return
    ok = True
    for check in found:
        mark = {"ok": "✓", "warn": "!", "missing": "✗"}[check.status]
        fix = f"  → {check.fix}" if check.fix else ""
        emit(f"{mark} {check.name}: {check.detail}{fix}")
        ok = ok and check.status != "missing"
    if not ok:
        console.print(Text.assemble("\nInstall everything with: ", ("virtbench setup", "bold")))


@cli.command()
@click.option(
    "--disk",
    is_flag=True,
    help="measure the host's disk ceiling now (native fio O_DIRECT, high queue depth) and"
    " cache it: O_DIRECT figures above it are invalid",
)
@click.option(
    "--dir",
    "dirs",
    multiple=True,
    type=click.Path(path_type=Path, file_okay=False),
    help="a directory on the device to measure (repeatable; default: where the platforms"
    " keep their data)",
)
@click.option(
    "--aa",
    "aa_campaign",
    is_flag=False,
    flag_value="quick",
    default=None,
    metavar="[CAMPAIGN]",
    help="measure each test case's noise floor: CAMPAIGN's baseline twice in the same rounds"
    " (default campaign: quick); later runs judge their ratios against it (docs/verdicts.md)",
)
@click.option(
    "--repetitions",
    type=click.IntRange(3, 1000),
    default=5,
    show_default=True,
    help="rounds of the A/A run (--aa)",
)
@results_dir_option
@store_option
@click.option("--passes", type=click.IntRange(1, 20), default=3, show_default=True)
@click.option(
    "--runtime", type=click.IntRange(1, 60), default=2, show_default=True, help="s per pass"
)
def calibrate(
    disk: bool,
    dirs: tuple[Path, ...],
    aa_campaign: str | None,
    repetitions: int,
    results_dir: Path,
    store: str | None,
    passes: int,
    runtime: int,
) -> None:
    """Measure host limits that judge a run's figures, and keep them with the host facts:
    the disk ceiling (--disk) and the A/A noise floors (--aa)."""
    if aa_campaign is not None:
        _calibrate_aa(aa_campaign, repetitions, results_dir, store)
        if not disk:
            return
    from . import diskceiling
    from .ceiling.ensure import ensure
    from .runner.ceilings import default_dirs

    if not disk:
        raise click.UsageError(
            "say what to calibrate: --disk (the host's disk ceiling), --aa (noise floors)"
        )
    where = [str(d) for d in dirs] or default_dirs()
    ceilings, notes = ensure(where, say, refresh=True, passes=passes, runtime_s=runtime)
    table = Rows(("device", "fs", "pattern", "MiB/s", "IO/s", "limit MiB/s", "passes MiB/s"))
    for c in ceilings:
        for pattern in diskceiling.PATTERNS:
            bw = c.passes.get(pattern, {}).get("bandwidth_mib_s", [])
            table.add_row(
                c.key.source,
                c.key.fs_type,
                pattern,
                f"{c.median(pattern, 'bandwidth_mib_s') or 0:.0f}",
                f"{c.median(pattern, 'iops') or 0:.0f}",
                f"{c.limit(pattern, 'bandwidth_mib_s') or 0:.0f}",
                " ".join(f"{v:.0f}" for v in bw),
            )
    table.print(None)
    if notes:
        raise VirtbenchError("; ".join(notes))


def _calibrate_aa(campaign: str, repetitions: int, results_dir: Path, store: str | None) -> None:
    """Run CAMPAIGN's baseline twice, keep each test case's A/A floor for later runs."""
    import time as time_mod

    from . import hostfloors, watchdog
    from .analysis import floors
    from .analysis import groups as groups_mod
    from .campaign import loader
    from .runner.run import Runner

    aa = loader.aa_only(loader.load(campaign), repetitions)
    runner = Runner(results_dir, console, store=store)
    with watchdog.guard():
        run_id = runner.start(aa)
    if runner.interrupted_by is not None:
        sys.exit(128 + runner.interrupted_by)
    st = runner.store
    groups = groups_mod.build(st.sample_rows(run_id), st.description(run_id))
    measured = floors.from_aa(groups, aa.settings.baseline or "")
    if not measured:
        raise VirtbenchError(f"A/A run {run_id} gave no floor (too few valid rounds?)")
    now = time_mod.time()
    when = time_mod.strftime("%Y-%m-%d %H:%M", time_mod.localtime(now))
    fact = floors.to_host_fact(measured, run_id, when) | {"measured_at": now}
    path = hostfloors.save(fact)
    table = Rows(("test case", "metric", "dims", "scenario", "A/A floor"))
    for (tc, metric, dims, scenario, _role), value in sorted(measured.items()):
        dims_text = ", ".join(f"{k}={v}" for k, v in json.loads(dims))
        table.add_row(tc, metric, dims_text or "–", scenario, f"±{value * 100:.1f}%")
    table.print(None)
    say(f"A/A floors of run {run_id} kept in {path}; runs from now on are judged against them")


@cli.command()
@click.option("--run", "run_ref", default="latest", show_default=True, help="RUN_ID or 'latest'")
@format_option(
    help="jsonl: one object per sample (the default); json: one array; csv, tsv, md: the"
    " contract's columns then one per dimension label (docs/export.md); with --list: tsv"
)
@click.option("--list", "list_runs", is_flag=True, help="list the runs in the store")
@results_dir_option
@store_option
def results(run_ref, fmt, list_runs, results_dir, store) -> None:
    """Export a run's samples (the export contract: docs/export.md); an incomplete run is
    said so on stderr. --list: run id, name, status, time of that status (a run whose runner
    is gone shows as lost, with the time it was found so)."""
    from . import export
    from .runner import states

    store = _open_to_read(store, results_dir)
    if list_runs:
        states.settle_lost(store, results_dir)
        rows = Rows(("run", "campaign", "status", "at"))
        for r in store.runs():
            at = r["finished_at"] if r["status"] != "running" else r["started_at"]
            rows.add_row(r["run_id"], r["name"], r["status"], states.when(at))
        if fmt is None:  # the listing scripts already read: no header, tab-separated
            emit("".join("\t".join(map(str, r)) + "\n" for r in rows.rows))
        else:
            rows.print(fmt)
        return
    run_id = store.resolve_run(run_ref)
    states.settle_lost(store, results_dir, [run_id])
    note = states.incomplete(store, results_dir, run_id)
    if note:
        _note(note)
    for stop in store.run_stops(run_id):  # adaptive repetitions: why each test case stopped
        _note(stop.detail)
    fmt = fmt or "jsonl"
    if fmt == "md":
        header, lines = export.table_rows(store, run_id)
        text = cli_output.markdown_table(header, list(lines))
    else:
        text = {
            "jsonl": export.to_jsonl,
            "json": export.to_json,
            "csv": export.to_csv,
            "tsv": export.to_tsv,
        }[fmt](store, run_id)
    emit(text)


@cli.command()
@click.argument("run_ref", required=False, default="latest")
@results_dir_option
@store_option
@click.option("--output", type=click.Path(dir_okay=False, path_type=Path), help="HTML file path")
def report(run_ref, results_dir, store, output) -> None:
    """Write the HTML report of RUN_ID (default: latest) and print a Markdown summary."""
    if output is not None and not output.parent.is_dir():
        raise VirtbenchError(
            f"--output {output}: directory {output.parent} does not exist; create it first"
        )
    db = _open_to_read(store, results_dir)
    _report(db, db.resolve_run(run_ref), _store_dir(store, results_dir), output)


def _store_dir(store: str | None, results_dir: Path) -> Path:
    """Where a store's reports go (DIR/reports/RUN_ID.html): beside the SQLite file it came
    from, not under the working directory; a postgresql:// store's under RESULTS_DIR."""
    from .store import backend

    if not store or backend.is_url(store):
        return results_dir
    path = Path(store)
    return path if path.is_dir() else path.parent


def _open_to_read(store: str | None, results_dir: Path):
    """The store of a command that only reads: one this user cannot write (a colleague's
    results, a read-only export) is read without writing anything to it or beside it."""
    from .store.db import open_store

    opened = open_store(store, results_dir, read=True)
    if opened.read_note:
        _note(opened.read_note)
    return opened


def _can_create(path: Path) -> bool:
    """Could this process create (or replace) `path`, making the directories it lacks? The
    report is written then renamed over the old one: a read-only old report in a directory
    the user can write is replaced, so only the directory counts."""
    path = path.absolute()
    while not path.exists() and path != path.parent:
        path = path.parent
    target = path if path.is_dir() else path.parent
    return os.access(target, os.W_OK | os.X_OK)


def _report(store, run_id: str, base: Path, output: Path | None = None) -> None:
    """Print the Markdown summary; write the HTML to `output`, else BASE/reports/RUN_ID.html."""
    from .report import build

    html_path = build.default_path(base, run_id)
    if output is None and not _can_create(html_path):
        # results shared read-only: the summary still; the HTML goes where the user says
        emit(build.render(store, run_id)[1])
        _note(f"HTML report not written: cannot write {html_path}; pass --output FILE")
        return
    path, markdown = build.write(store, run_id, base, output)
    emit(markdown)
    say(f"HTML report: {path}")


@cli.command()
def cleanup() -> None:
    """Remove anything virtbench left behind (processes, cgroups, netns, links, mounts, VMs,
    Docker containers, volumes, network and its own dockerd with the chains it made, and
    /tmp copies of stores whose process is gone)."""
    from .cleanup_all import run_all

    removed = run_all()
    for line in removed:
        say(line)
    done = [r for r in removed if not r.startswith(("!", "left alone"))]
    console.print(f"cleanup: {len(done)} objects removed")


@cli.command()
@click.option("--reset", is_flag=True, help="write back every value `tune` changed")
@click.option("--dry-run", is_flag=True, help="print what would change; write nothing")
@click.option("--status", is_flag=True, help="say whether the host is tuned, and how")
@click.option(
    "--housekeeping",
    type=click.IntRange(0, (os.cpu_count() or 1) - 1),
    default=0,
    show_default=True,
    help="the CPU interrupts are moved to (keep it out of target_cpus)",
)
def tune(reset, dry_run, status, housekeeping) -> None:
    """Lower measurement noise (governor, turbo, THP, IRQ affinity); opt-in, undone by --reset."""
    from . import tune as tuning

    if reset:
        lines = tuning.reset()
        for line in lines:
            say(line)
        console.print(f"tune --reset: {len(lines)} settings restored")
        return
    if status:
        done = tuning.load()
        for c in done:
            say(f"{c.knob}: {c.path} = {c.new} (was {_was(c.old)})")
        console.print(f"tuned: {len(done)} settings changed" if done else "not tuned")
        return
    if dry_run:
        changes = tuning.plan(housekeeping=housekeeping)
    else:
        if os.geteuid() != 0:
            raise NeedsRootError("tuning the host")
        try:
            changes = tuning.apply(housekeeping=housekeeping)
        except RuntimeError as exc:
            raise VirtbenchError(str(exc)) from None
    for c in changes:
        what = "would set" if dry_run and not c.status else c.status or "set"
        say(f"{c.knob}: {c.path}: {what} ({_was(c.old)} -> {c.new})")
    changed = sum(c.status == tuning.SET for c in changes)
    console.print(
        "tune --dry-run: nothing written"
        if dry_run
        else f"tune: {changed} settings changed; `virtbench tune --reset` restores them"
    )


def _was(old: str | None) -> str:
    """A setting's value before tune, as a user reads it: None is a file that is absent or
    unreadable on this host."""
    return "absent" if old is None else old


@cli.command()
@click.option("--no-packages", is_flag=True, help="skip apt-get; only run the build steps")
@click.option("--step", "steps", multiple=True, help="run only this build step (repeatable)")
def setup(no_packages, steps) -> None:
    """Install the Debian packages of every tool and build images and probes (needs root)."""
    from . import setup_all, setup_host

    missing = None
    if not no_packages:
        try:
            setup_host.install_packages(say)
        except setup_host.NotInstalled as exc:  # e.g. docker.io: the rest still gets built
            missing = exc
    setup_all.run_steps(say, set(steps) or None)
    if missing is not None:
        raise missing
    console.print(_mark("setup complete", "green"))


@cli.group()
def images() -> None:
    """The shared root filesystem (containers' lower layer, VM guests' root)."""


@images.command("build")
@click.option("--force", is_flag=True, help="rebuild even if the current key is built")
def images_build(force: bool) -> None:
    """Build the image with debootstrap (minutes) unless its key is already built."""
    from .images import rootfs

    console.print(f"image ready: {rootfs.build(force=force, log=say)}")


@images.command("list")
@format_option(help="default: one line per image (whole paths, greppable)")
def images_list(fmt: str | None) -> None:
    """Cached images and their state; the current key is the one containers and VMs use.
    (`images status` is the same command, kept for old scripts.)"""
    from .images import rootfs

    found = rootfs.status()
    current_built = any(r["current"] and r["complete"] for r in found)
    if fmt:
        rows = Rows(("key", "state", "packages", "size_mb", "built_at", "build_seconds", "path"))
        for r in found:
            rows.add_row(
                r["key"],
                _image_state(r),
                r["packages"],
                r["size_mb"],
                r["built_at"],
                r["build_seconds"],
                r["path"],
            )
        rows.print(fmt)
    for r in [] if fmt else found:  # one line per image: whole paths, greppable
        built = f"built {r['built_at']} in {r['build_seconds']}s" if r["built_at"] else ""
        size = f"{r['size_mb']} MB" if r["size_mb"] else ""
        line = f"{r['key']}  {_image_state(r):10s}  {r['packages']} packages  {size}  {built}"
        emit(f"{line}  {r['path']}")
    if not current_built:
        say(f"current key {rootfs.key()} is not built: run virtbench images build")


def _image_state(r: dict) -> str:
    return ("current" if r["current"] else "old") if r["complete"] else "incomplete"


# one command, two names: `status` is hidden from the help so the listing is not offered twice
images.add_command(
    click.Command(
        "status",
        callback=images_list.callback,
        params=images_list.params,
        help=images_list.help,
        hidden=True,
    )
)


EXIT_REGRESSION = 3  # compare --fail-on-regression: some test case is slower
EXIT_NOT_COMPARABLE = 4  # compare --strict: the hosts differ in what matters
EXIT_NOTHING_COMPARED = 2  # compare: no test case in common (bad input: the wrong runs)


@cli.command(
    epilog="""\b
Exit status: 0 compared; 2 bad input (unknown run or platform, no test case in common);
3 with --fail-on-regression when any test case is 'slower';
4 with --strict when the host fingerprints differ in what matters."""
)
@click.argument("run_a")
@click.argument("run_b", required=False)
@results_dir_option
@store_option
@click.option(
    "--store-b",
    metavar="URL|DIR|FILE",
    help="the store of RUN_B (another host's results directory, SQLite file or a"
    " postgresql:// URL); default: the store of RUN_A",
)
@click.option(
    "--platforms",
    nargs=2,
    metavar="A B",
    help="compare platform A (of RUN_A) with platform B (of RUN_B, or of RUN_A when alone)",
)
@click.option(
    "--threshold",
    type=FiniteRange(0, 100),
    default=2.0,
    show_default=True,
    metavar="PCT",
    help="smallest change called faster/slower where no A/A floor was measured on A's host",
)
@click.option("--all-metrics", is_flag=True, help="every metric, not only each test case's primary")
@format_option(
    default="md",
    help="md: the verdict table; json: the whole comparison; jsonl, csv, tsv: one row per"
    " test case compared",
)
@click.option(
    "--html",
    "html_path",
    type=click.Path(dir_okay=False, path_type=Path),
    help="also write an HTML page here",
)
@click.option(
    "--fail-on-regression", is_flag=True, help=f"exit {EXIT_REGRESSION} if any test case is slower"
)
@click.option(
    "--strict",
    is_flag=True,
    help=f"refuse (exit {EXIT_NOT_COMPARABLE}) when the hosts differ in what matters",
)
def compare(
    run_a,
    run_b,
    results_dir,
    store,
    store_b,
    platforms,
    threshold,
    all_metrics,
    fmt,
    html_path,
    fail_on_regression,
    strict,
) -> None:
    """Is B faster or slower than A? Per test case: B/A with a 95% CI and a verdict
    (faster / slower / same / undecided; docs/verdicts.md).

    Compares RUN_B with RUN_A (run ids, unique prefixes or 'latest'; the same platforms by
    name, or --platforms A B), or two platforms of RUN_A (--platforms A B alone)."""
    from .analysis import compare as cmp
    from .analysis import fingerprint
    from .report import compare_page

    if html_path is not None and not html_path.parent.is_dir():
        raise VirtbenchError(f"--html {html_path}: directory {html_path.parent} does not exist")
    if run_b is None and not platforms:
        raise VirtbenchError("give RUN_B, or --platforms A B to compare two platforms of RUN_A")
    store_a = _open_to_read(store, results_dir)
    store_2 = _open_to_read(store_b, results_dir) if store_b else store_a
    id_a = store_a.resolve_run(run_a)
    id_b = store_2.resolve_run(run_b) if run_b else id_a
    one_run = store_2 is store_a and id_a == id_b
    if one_run and not platforms:
        raise VirtbenchError(f"RUN_A and RUN_B are the same run ({id_a}); give --platforms A B")
    plat_a, plat_b = platforms or (None, None)
    side_a = _compare_side(store_a, id_a, plat_a, threshold / 100.0)
    side_b = _compare_side(store_2, id_b, plat_b, threshold / 100.0)
    settings = cmp.Settings(threshold=threshold / 100.0)
    outcomes, pairing = cmp.compare_groups(
        side_a["groups"],
        side_b["groups"],
        plat_a,
        plat_b,
        settings,
        all_metrics,
        paired=one_run,
        floor_of=side_a["floor_of"],
    )
    gate = None
    if not one_run:
        used = {o.test_case for o in outcomes}
        runtimes = side_a["tools"] | side_b["tools"]
        gate = fingerprint.compare(side_a["host"], side_b["host"], used, runtimes)
        gate.differences.extend(_engine_differences(side_a, side_b, plat_a, plat_b))
        if not gate.comparable:
            what = ", ".join(d.key for d in gate.mattering)
            if strict:
                for line in compare_page.gate_warning(gate):
                    err_console.print(Text(line))
                err_console.print(
                    _mark("refused (--strict):", "red"), "the hosts differ in", Text(what)
                )
                sys.exit(EXIT_NOT_COMPARABLE)
            err_console.print(_mark("warning:", "yellow"), "the hosts differ in", Text(what))
    doc = compare_page.CompareDoc(
        side_a["side"], side_b["side"], settings, outcomes, pairing.only_a, pairing.only_b, gate
    )
    if fmt == "json":
        emit(json.dumps(compare_page.to_json(doc), indent=1, default=str))
    elif fmt == "md":
        emit(compare_page.markdown(doc))
    else:
        cli_output.records_rows(compare_page.to_json(doc)["results"]).print(fmt)
    if html_path is not None:
        compare_page.write_html(doc, html_path)
        if fmt == "md":
            say(f"HTML page: {html_path}")
    if not outcomes:  # nothing compared is no verdict, least of all "no regression"
        err_console.print(
            _mark("error:", "red"),
            Text(f"runs {id_a} and {id_b} have no test case (and platform) in common"),
        )
        sys.exit(EXIT_NOTHING_COMPARED)
    if fail_on_regression and any(o.verdict == cmp.SLOWER for o in outcomes):
        sys.exit(EXIT_REGRESSION)


@cli.command("import")
@click.argument("files", nargs=-1, required=True, type=click.Path(path_type=Path))
@results_dir_option
@store_option
def import_(files, results_dir, store) -> None:
    """Copy the runs of SQLite results FILES (another host's virtbench.db or its results
    directory, a run's fallback-RUN_ID.db) into the store, typically a shared postgresql://
    one. Runs already there are skipped, so importing twice changes nothing; cells a run
    finished only in its fallback file are added to it."""
    from .store import importer
    from .store.db import open_store

    dst = open_store(store, results_dir, create=True)
    for f in files:
        real = Path(os.path.realpath(f))  # a link loop stays a path (Path.resolve raises)
        if not dst.shared and real in (dst.path.resolve(), dst.path.parent.resolve()):
            raise VirtbenchError(f"import: {f} is the store itself ({dst.path})")
        importer.import_file(f, dst, say)


@cli.command()
@click.argument("seed")
@click.option("--quick", is_flag=True, help="run the seed's quick campaign (minutes, not hours)")
@click.option("--run", "run_ref", metavar="RUN_ID", help="judge a stored run ('latest' too)")
@click.option("--format", "fmt", type=click.Choice(["md", "json"]), default="md", show_default=True)
@results_dir_option
@store_option
def replicate(seed, quick, run_ref, fmt, results_dir, store) -> None:
    """The paper's findings of SEED (000..004) beside this host's measurement: for each, the
    quantity with its 95% interval and run id, a verdict (reproduces / partly / does not /
    not comparable here / not measured) and its reason (docs/replication.md). Without --run,
    runs the seed's campaign (--quick: its short one) first."""
    from .replication import compute, load, table
    from .report.data import ReportData

    findings = load.load(seed)
    if run_ref and quick:
        raise VirtbenchError(
            "give --quick (run the seed's quick campaign) or --run RUN_ID, not both"
        )
    if run_ref:
        opened = _open_to_read(store, results_dir)
        run_id = opened.resolve_run(run_ref)
        name = opened.run(run_id).get("name")
        if name not in findings.campaigns:
            err_console.print(
                Text(
                    f"note: run {run_id} is of campaign {name!r}, not one of seed "
                    f"{findings.seed}'s ({', '.join(findings.campaigns)})"
                )
            )
    else:
        from . import watchdog
        from .campaign import loader
        from .runner.run import Runner

        campaign = loader.load(findings.quick if quick else findings.full)
        runner = Runner(results_dir, console, store=store)
        with watchdog.guard():
            run_id = runner.start(campaign, None, None)
        if runner.interrupted_by is not None:  # Ctrl-C: cells kept, no verdict on a partial run
            sys.exit(128 + runner.interrupted_by)
        opened = runner.store
    results = compute.evaluate(ReportData.load(opened, run_id), findings.findings)
    render = table.as_json if fmt == "json" else table.markdown
    sys.stdout.write(render(findings, results, run_id))


def _engine_differences(side_a: dict, side_b: dict, plat_a, plat_b) -> list:
    """Engine settings (runsc platform, docker storage driver...) that differ between the
    compared platforms: they matter as much as a kernel does."""
    from .analysis import fingerprint

    ea, eb = side_a["engines"], side_b["engines"]
    pairs = [(plat_a, plat_b)] if plat_a else [(p, p) for p in sorted(set(ea) & set(eb))]
    out = []
    for pa, pb in pairs:
        where = pa if pa == pb else f"{pa}/{pb}"
        out += fingerprint.engine_differences(ea.get(pa), eb.get(pb), where)
    return out


def _compare_side(store, run_id: str, platform: str | None, threshold: float) -> dict:
    """What compare needs of one run: its groups, host facts, and its platforms' runtimes."""
    from .analysis import fingerprint, floors, platform_facts
    from .analysis import groups as groups_mod
    from .report.compare_page import Side

    run = store.run(run_id)
    cells = store.cells(run_id)
    specs = {c.platform: json.loads(c.platform_json or "{}") for c in cells}
    if platform is not None and platform not in specs:
        raise VirtbenchError(
            f"no platform '{platform}' in run {run_id}; it has: {', '.join(specs) or 'none'}"
        )
    rows = store.sample_rows(run_id)
    host = json.loads(run.get("host_json") or "{}")
    host.setdefault("virtbench", run.get("virtbench_version"))
    used = [specs[platform]] if platform is not None else list(specs.values())
    groups = groups_mod.build(rows, store.description(run_id))
    settings = json.loads(run.get("settings_json") or "{}")
    floor_of = floors.floor_function(groups, settings.get("baseline"), host, threshold)
    return {
        "groups": groups,
        "floor_of": lambda g: floor_of(g.key),
        "host": host,
        "tools": set().union(*(platform_facts.runtime_tools(host, s) for s in used)),
        "engines": fingerprint.engines_of((c.platform, c.labels) for c in cells),
        "side": Side(run_id, run["name"], str(store.path), platform),
    }


# --- fleet: a campaign on every host of an Ansible inventory ------------------------------
EXIT_FLEET_INCOMPLETE = 6  # some host failed or was lost


def _fleet_options(fn):
    for opt in reversed(
        [
            results_dir_option,
            store_option,
            click.option(
                "--forks",
                type=click.IntRange(1, 1000),
                default=50,
                show_default=True,
                help="hosts Ansible works on at once",
            ),
            click.option(
                "--poll-interval",
                type=FiniteRange(0.5, 3600),
                default=15.0,
                show_default=True,
                metavar="SECONDS",
                help="time between two looks at the running hosts",
            ),
            click.option(
                "--lost-after",
                type=click.IntRange(1, 1000),
                default=3,
                show_default=True,
                metavar="N",
                help="a running host is lost after N polls in a row that cannot reach it",
            ),
        ]
    ):
        fn = opt(fn)
    return fn


@cli.group()
def fleet() -> None:
    """Run a campaign on every host of an Ansible inventory, in parallel (ansible-core over
    SSH; nothing of virtbench stays running on a host between runs)."""


@fleet.command(
    "run",
    epilog="""\b
Exit status: 0 every host ok, results imported; 2 bad input (campaign, inventory,
--limit); 5 the store could not take the results (the host files are kept: virtbench
import them); 6 some host failed or was lost (continue with: virtbench fleet resume).""",
)
@click.argument("campaign")
@click.option(
    "-i",
    "--inventory",
    required=True,
    type=click.Path(path_type=Path),
    help="an Ansible inventory (INI, YAML, a directory)",
)
@click.option("--limit", metavar="PATTERN", help="only the hosts this Ansible pattern selects")
@_fleet_options
def fleet_run(
    campaign, inventory, limit, results_dir, store, forks, poll_interval, lost_after
) -> None:
    """Run CAMPAIGN (a .toml file or a built-in name) on every host of INVENTORY.

    Each host gets this virtbench (install.sh --no-run), runs the campaign in the background
    and is polled; its store is fetched to RESULTS/fleet/FLEET_ID/HOST.db at every poll, and
    imported into the store (--store, else RESULTS_DIR/virtbench.db) at the end."""
    from .campaign import loader
    from .fleet import inventory as inv
    from .fleet import run as fleet_mod
    from .fleet import state

    loader.load(campaign)  # a bad campaign is refused before any host is touched
    hosts = inv.hosts(inventory, limit)
    _fleet_store_check(store, results_dir)
    record = state.create(results_dir, campaign, inventory, limit, hosts)
    fleet_mod.ship_campaign(record, campaign)
    say(f"fleet {record.fleet_id}: {campaign} on {len(hosts)} hosts -> {record.dir}")
    settings = fleet_mod.Settings(forks=forks, poll_interval=poll_interval, lost_after=lost_after)
    _fleet_drive(record, settings, "run", store, results_dir)


@fleet.command("resume")
@click.argument("fleet_id")
@_fleet_options
def fleet_resume(fleet_id, results_dir, store, forks, poll_interval, lost_after) -> None:
    """Continue FLEET_ID on every host not ok: a lost host's run goes on from its last
    finished cell (virtbench run --resume RUN_ID there) once the host is back."""
    from .fleet import run as fleet_mod
    from .fleet import state

    record = state.load(results_dir, fleet_id)
    settings = fleet_mod.Settings(forks=forks, poll_interval=poll_interval, lost_after=lost_after)
    _fleet_drive(record, settings, "resume", store, results_dir)


@fleet.command("show")
@click.argument("fleet_id")
@results_dir_option
@format_option()
def fleet_show(fleet_id, results_dir, fmt) -> None:
    """Per host: status, run id, cells, start, end and what failed."""
    from .fleet import state

    _fleet_table(state.load(results_dir, fleet_id), fmt)


def _fleet_store_check(store: str | None, results_dir: Path) -> None:
    """A wrong --store is refused before any host is touched (a store that goes away later
    only delays the import: the host stores are kept)."""
    from .store.db import open_store

    open_store(store, results_dir, create=True).close()


def _fleet_drive(record, settings, how: str, store: str | None, results_dir: Path) -> None:
    from .fleet import gather, state
    from .fleet import run as fleet_mod

    runner = fleet_mod.FleetRunner(record, settings, say)
    try:
        runner.run() if how == "run" else runner.resume()
    except KeyboardInterrupt:
        record.save()
        err_console.print(
            Text(
                f"interrupted: the hosts' runs go on; follow them with"
                f" virtbench fleet resume {record.fleet_id}"
            )
        )
        sys.exit(130)
    imported = gather.gather(record, store, results_dir, say)
    _fleet_table(record, None)
    if any(h.status != state.OK for h in record.hosts.values()):
        say(f"not every host is ok; continue with: virtbench fleet resume {record.fleet_id}")
        sys.exit(EXIT_FLEET_INCOMPLETE)
    if not imported:
        sys.exit(EXIT_STORE_FALLBACK)


def _fleet_table(record, fmt: str | None) -> None:
    from .runner.states import when

    table = Rows()
    for col in ("host", "status", "run", "cells", "started", "ended", "message"):
        table.add_column(col)
    for host, h in record.hosts.items():
        cells = f"{h.cells_done}/{h.cells_total}" if h.cells_total else "-"
        table.add_row(
            host, h.status, h.run_id or "-", cells, when(h.started_at), when(h.ended_at), h.message
        )
    table.print(fmt)


@fleet.command("report")
@click.argument("fleet_id", required=False)
@click.option(
    "--run",
    "run_refs",
    multiple=True,
    metavar="RUN_ID",
    help="a host's run (repeatable); instead of, or beside, FLEET_ID's runs",
)
@results_dir_option
@store_option
@click.option("--all-metrics", is_flag=True, help="every metric and role, not only the primary")
@format_option(
    default="md",
    help="md, json, csv, tsv: the side-by-side rows (per host and group: mean, CI, CV);"
    " jsonl: every sample (the export contract) plus host",
)
def fleet_report(fleet_id, run_refs, results_dir, store, all_metrics, fmt) -> None:
    """Hosts side by side: per test case one row per host (its mean, CI, CV, hypervisor),
    never a mean over hosts. The runs come from FLEET_ID's record and/or --run."""
    from . import export
    from .fleet import state
    from .report import hosts as hosts_mod

    if not fleet_id and not run_refs:
        raise VirtbenchError("give FLEET_ID or --run RUN_ID (repeatable)")
    db = _open_to_read(store, results_dir)
    named: list[tuple[str, str | None]] = []
    if fleet_id:
        record = state.load(results_dir, fleet_id)
        known = {r["run_id"] for r in db.runs()}
        for host, h in record.hosts.items():
            if h.run_id and h.run_id in known:
                named.append((h.run_id, host))
            else:
                _note(f"{host}: no run of it in {db.path} ({h.status})")
    named += [(db.resolve_run(r), None) for r in run_refs]
    runs = [hosts_mod.host_run(db, run_id, name) for run_id, name in named]
    if fmt == "jsonl":  # the export contract, one more key per line: the host
        for hr in runs:
            for line in export.to_jsonl(db, hr.run_id).splitlines():
                rec = json.loads(line) | {"host": hr.host, "hypervisor": hr.hypervisor}
                click.echo(json.dumps(rec, default=str))
        return
    rows = hosts_mod.rows(db, runs, all_metrics)
    if fmt == "json":
        emit(json.dumps(hosts_mod.to_json(rows), indent=1, default=str))
    elif fmt in ("csv", "tsv"):
        cli_output.records_rows(hosts_mod.to_json(rows)).print(fmt)
    else:
        title = f"fleet {fleet_id}" if fleet_id else "hosts side by side"
        emit(hosts_mod.markdown(rows, title))


def main() -> None:
    pychild.drop_relative_path_entries()  # root never runs ./ip for ip (docs/security.md)
    try:
        cli.main(standalone_mode=False)
    except click.exceptions.Abort:
        err_console.print("aborted")
        sys.exit(130)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except VirtbenchError as exc:
        _fail(str(exc), exc.exit_code)
    except KeyboardInterrupt:
        err_console.print("interrupted")
        sys.exit(130)
    except OSError as exc:
        if _stdout_gone(exc):
            sys.exit(_EXIT_OUTPUT_GONE)
        # a path the system refuses (ENAMETOOLONG, ELOOP, EACCES ...) is input the user can
        # fix: named, without a traceback
        where = exc.filename if exc.filename is not None else "a file"
        _fail(f"{printable(str(where))}: {exc.strerror or exc}", VirtbenchError.exit_code)
    except sqlite3.DatabaseError as exc:  # a damaged store met outside the store's own checks
        _fail(f"a results store cannot be read: {exc}", VirtbenchError.exit_code)
    try:
        sys.stdout.flush()  # a full device or a closed pipe shows here, not at exit
    except OSError as exc:
        if not _stdout_gone(exc):
            raise
        sys.exit(_EXIT_OUTPUT_GONE)


_EXIT_OUTPUT_GONE = 1


def _fail(message: str, code: int) -> None:
    # a path or name in the message may hold ESC: never raw on the terminal
    err_console.print(_mark("error:", "red"), Text(printable(message, allow="\n\t")))
    sys.exit(code)


def _stdout_gone(exc: OSError) -> bool:
    """Was `exc` writing stdout to a closed pipe (`| head -1`) or a full device (`> /dev/full`)?
    Then say so once on stderr (not for a pipe: its reader left on purpose) and point stdout at
    /dev/null so the interpreter's own flush at exit does not fail again."""
    if exc.errno not in (errno.EPIPE, errno.ENOSPC, errno.EDQUOT, errno.EIO):
        return False
    if exc.filename is not None:  # a file we write, not stdout
        return False
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):
        pass
    if exc.errno != errno.EPIPE:
        err_console.print(_mark("error:", "red"), Text(f"cannot write the output: {exc.strerror}"))
    return True


if __name__ == "__main__":
    main()
