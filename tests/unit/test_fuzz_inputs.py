"""Fuzz of what a user (or another host's file) hands virtbench (issue 37): damaged, foreign
and future stores, and path arguments that are long, devices, symlinks, markup or control
characters. Each goes through the real entry point (`virtbench.cli.main`, in this process:
seconds, not a Python start per case) and must end with an exit status and a message that
names the file: never a traceback, never a write into a file that is not virtbench's."""

from __future__ import annotations

import hashlib
import math
import shutil
import sqlite3
import sys
from pathlib import Path

import pytest

from virtbench import cli
from virtbench.campaign import loader
from virtbench.errors import CampaignError
from virtbench.parsing import printable
from virtbench.results import Sample
from virtbench.runner import locks
from virtbench.runner import run as runner_run
from virtbench.runner.cell import Outcome
from virtbench.store import schema
from virtbench.store.db import DB_NAME, Store

GOLDEN = Path(__file__).parents[1] / "data" / "runs" / "v1" / DB_NAME
SUITES, VMLIFE = "20261123-200639-9740", "20261123-201021-dd42"
LONG = "d" * 300  # one path component over NAME_MAX (255)


def vb(capsys, *args: str) -> tuple[int, str]:
    """`virtbench ARGS` through cli.main: (exit status, stdout + stderr)."""
    old = sys.argv
    sys.argv = ["virtbench", *args]
    try:
        cli.main()
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    finally:
        sys.argv = old
    out = capsys.readouterr()
    text = out.out + out.err
    assert "Traceback" not in text, text
    return code, text


def _current(tmp_path: Path, name: str = "store.db") -> Path:
    """The golden store, migrated to the current schema, at tmp_path/name."""
    db = tmp_path / name
    shutil.copyfile(GOLDEN, db)
    Store(db).close()
    return db


def _sql(db: Path, *statements: str) -> Path:
    conn = sqlite3.connect(db)
    for s in statements:
        conn.execute(s)
    conn.commit()
    conn.close()
    return db


def _digest(p: Path) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()


# --- stores: each case makes a file the read commands and import must refuse by name ------
def _truncated(tmp_path: Path) -> Path:
    db = _current(tmp_path)
    data = db.read_bytes()
    db.write_bytes(data[: len(data) // 3])
    return db


def _corrupt(tmp_path: Path) -> Path:
    db = _current(tmp_path)
    data = bytearray(db.read_bytes())
    page = 4096
    for off in range(page, len(data), page):  # every page but the header's: garbage
        data[off : off + page] = bytes((i * 37 + 11) % 256 for i in range(page))
    db.write_bytes(bytes(data))
    return db


def _foreign(tmp_path: Path) -> Path:
    return _sql(tmp_path / "other-app.sqlite", "CREATE TABLE accounts (id, owner)")


def _not_sqlite(tmp_path: Path) -> Path:
    db = tmp_path / "notes.db"
    db.write_text("not a database at all\n" * 50)
    return db


def _empty_db(tmp_path: Path) -> Path:
    db = tmp_path / "empty.db"
    db.write_bytes(b"")
    return db


def _future(tmp_path: Path) -> Path:
    return _sql(_current(tmp_path), f"UPDATE schema_version SET version = {schema.CURRENT + 1}")


def _version_text(tmp_path: Path) -> Path:
    return _sql(_current(tmp_path), "UPDATE schema_version SET version = 'five'")


def _version_null(tmp_path: Path) -> Path:
    db = _current(tmp_path)
    return _sql(
        db,
        "DROP TABLE schema_version",
        "CREATE TABLE schema_version (version INTEGER)",
        "INSERT INTO schema_version VALUES (NULL)",
    )


def _version_only(tmp_path: Path) -> Path:
    return _sql(
        tmp_path / "bare.db",
        "CREATE TABLE schema_version (version INTEGER NOT NULL)",
        f"INSERT INTO schema_version VALUES ({schema.CURRENT})",
    )


def _bad_sample_json(tmp_path: Path) -> Path:
    return _sql(_current(tmp_path), "UPDATE samples SET labels_json = '{not json'")


def _bad_cell_json(tmp_path: Path) -> Path:
    return _sql(_current(tmp_path), "UPDATE cells SET labels_json = '[1, 2'")


def _bad_settings_json(tmp_path: Path) -> Path:
    return _sql(_current(tmp_path), "UPDATE runs SET settings_json = 'x{', host_json = 'null{'")


def _inf_value(tmp_path: Path) -> Path:
    return _sql(_current(tmp_path), "UPDATE samples SET value = 9e999 WHERE valid = 1")


def _text_value(tmp_path: Path) -> Path:
    return _sql(_current(tmp_path), "UPDATE samples SET value = 'fast' WHERE valid = 1")


REFUSED = [
    _truncated,
    _corrupt,
    _foreign,
    _not_sqlite,
    _empty_db,
    _future,
    _version_text,
    _version_null,
    _version_only,
]
DAMAGED_ROWS = [_bad_sample_json, _bad_cell_json, _bad_settings_json, _inf_value, _text_value]


@pytest.mark.parametrize("make", REFUSED + DAMAGED_ROWS, ids=lambda f: f.__name__.strip("_"))
def test_read_commands_refuse_a_bad_store_by_name(tmp_path, capsys, make):
    db = make(tmp_path)
    before = _digest(db)
    if make in REFUSED:
        code, text = vb(capsys, "results", "--list", "--store", str(db))
        assert code != 0 and db.name in text, text
    for args in (
        ["results", "--run", SUITES],
        ["report", SUITES, "--output", str(tmp_path / "r.html")],
        ["compare", SUITES, VMLIFE],
    ):
        code, text = vb(capsys, *args, "--store", str(db))
        assert code != 0 and db.name in text, (args, text)
    assert _digest(db) == before  # nothing created, migrated or switched to WAL
    if make in REFUSED:  # (a damaged row is in a virtbench store: WAL already, its -wal too)
        assert not (tmp_path / (db.name + "-wal")).exists()


@pytest.mark.parametrize("make", REFUSED + DAMAGED_ROWS, ids=lambda f: f.__name__.strip("_"))
def test_import_of_a_bad_store_exits_non_zero_naming_it(tmp_path, capsys, make):
    src = make(tmp_path)
    dst = tmp_path / "dst" / DB_NAME
    code, text = vb(capsys, "import", str(src), "--store", str(dst))
    assert code != 0 and src.name in text, text
    if dst.exists():  # all or nothing: no run of a refused file is half there
        assert Store(dst).runs() == []


def test_import_refuses_samples_without_their_cells(tmp_path, capsys):
    src = _sql(_current(tmp_path), f"DELETE FROM cells WHERE run_id = '{SUITES}'")
    dst = tmp_path / "dst.db"
    code, text = vb(capsys, "import", str(src), "--store", str(dst))
    assert code != 0 and src.name in text and "cells it does not hold" in text, text
    assert SUITES not in {r["run_id"] for r in Store(dst).runs()}


def test_import_names_a_cell_id_clash_and_copies_none_of_that_run(tmp_path, capsys):
    dst = _current(tmp_path, "dst.db")
    src = _current(tmp_path, "src.db")
    # the same cells under another run id: their ids are already the store's
    tables = ("runs", "cells", "samples", "series", "run_metrics", "run_labels", "run_suites")
    _sql(
        src,
        *(f"DELETE FROM {t} WHERE run_id <> '{SUITES}'" for t in (*tables, "run_stops")),
        *(f"UPDATE {t} SET run_id = 'clash-run'" for t in (*tables, "run_stops")),
    )
    code, text = vb(capsys, "import", str(src), "--store", str(dst))
    assert code != 0 and "already in" in text and "clash-run" in text, text
    assert "clash-run" not in {r["run_id"] for r in Store(dst).runs()}


def test_foreign_sqlite_file_is_never_written_by_any_command(tmp_path, capsys):
    db = _foreign(tmp_path)
    before = _digest(db)
    for args in (
        ["results", "--list", "--store", str(db)],
        ["report", "--store", str(db)],
        ["import", str(GOLDEN), "--store", str(db)],
    ):
        code, text = vb(capsys, *args)
        assert code != 0 and "is not a virtbench store" in text and db.name in text, text
    assert _digest(db) == before
    conn = sqlite3.connect(db)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
    conn.close()


def test_a_nan_sample_is_stored_invalid_not_an_integrity_error(tmp_path):
    st = _current(tmp_path)
    store = Store(st)
    cell = store.cells(SUITES)[0]
    nan = Sample("events_per_s", math.nan, "events/s", True)
    store.finish_cell(SUITES, cell.cell_id, "ok", [nan], [("target", "x", 0.0, math.nan, "u")])
    (row,) = [r for r in store.sample_rows(SUITES) if r["cell_id"] == cell.cell_id]
    assert row["valid"] == 0 and "nan" in row["invalid_reason"]
    store.close()


# --- control characters from an imported store ------------------------------------------
def test_control_characters_in_stored_names_are_escaped_when_printed(tmp_path, capsys):
    db = _sql(
        _current(tmp_path),
        f"UPDATE runs SET name = 'evil\x1b[2J\x07name' WHERE run_id = '{SUITES}'",
        "UPDATE cells SET platform = 'plat\x1b]0;x\x07' WHERE platform = 'native'",
    )
    outputs = [
        vb(capsys, "results", "--list", "--store", str(db)),
        vb(capsys, "report", SUITES, "--store", str(db), "--output", str(tmp_path / "r.html")),
        vb(capsys, "compare", SUITES, VMLIFE, "--store", str(db)),
    ]
    for _code, text in outputs:
        assert "\x1b" not in text and "\x07" not in text, text
    assert "evil\\x1b[2J\\x07name" in outputs[0][1]
    html = (tmp_path / "r.html").read_text()
    assert "\x1b" not in html and "\x07" not in html and "\\x1b" in html


# --- compare ------------------------------------------------------------------------------
@pytest.mark.parametrize("value", ["nan", "inf", "-1", "-inf", "NaN"])
def test_compare_threshold_must_be_a_finite_percentage(tmp_path, capsys, value):
    db = _current(tmp_path)
    code, text = vb(capsys, "compare", SUITES, VMLIFE, "--store", str(db), "--threshold", value)
    assert code == 2 and "--threshold" in text, text


@pytest.mark.parametrize("flag", [[], ["--fail-on-regression"]])
def test_compare_with_no_test_case_in_common_exits_non_zero(tmp_path, capsys, flag):
    db = _current(tmp_path)  # the suites run and the VM lifecycle run share no test case
    code, text = vb(capsys, "compare", SUITES, VMLIFE, "--store", str(db), *flag)
    assert code == cli.EXIT_NOTHING_COMPARED and "no test case" in text, text


# --- path arguments -------------------------------------------------------------------------
def _paths(tmp_path: Path) -> dict[str, str]:
    link = tmp_path / "link.db"
    link.symlink_to(_foreign(tmp_path))
    loop = tmp_path / "loop"
    loop.symlink_to(loop)
    return {
        "long": str(tmp_path / LONG / "x.db"),
        "long-leaf": str(tmp_path / (LONG + ".db")),
        "device": "/dev/null",
        "symlink-to-foreign": str(link),
        "symlink-loop": str(loop),
        "markup": str(tmp_path / "x[/]" / "[bold]y[/bold]"),
        "control": str(tmp_path / "a\x1b[31mb\x07"),
    }


@pytest.mark.parametrize(
    "kind",
    ["long", "long-leaf", "device", "symlink-to-foreign", "symlink-loop", "markup", "control"],
)
def test_every_path_argument_is_refused_by_name_without_traceback(tmp_path, capsys, kind):
    path = _paths(tmp_path)[kind]
    shown = printable(Path(path).name[:20])
    cases = [
        ["results", "--list", "--store", path],
        ["results", "--list", "--results-dir", path],
        ["report", "--store", path],
        ["compare", "a", "b", "--store", path],
        ["import", path, "--store", str(tmp_path / "dst.db")],
        ["run", path + ".toml"],
        ["fleet", "report", "--run", "x", "--store", path],
    ]
    for args in cases:
        code, text = vb(capsys, *args)
        assert code != 0, (args, text)
        assert shown in text or printable(path[:40]) in text, (args, text)
        assert "\x1b" not in text and "\x07" not in text, (args, text)


def test_long_inventory_path_is_a_clear_error(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("VIRTBENCH_INVENTORY", str(tmp_path / LONG))
    code, text = vb(capsys, "fleet", "run", "quick", "-i", str(tmp_path / LONG))
    assert code != 0 and LONG[:40] in text, text


def test_full_device_and_closed_pipe_end_without_traceback(tmp_path, capfd):
    import subprocess

    db = _current(tmp_path)
    src = str(Path(cli.__file__).parents[1])
    env = {"PYTHONPATH": src, "PATH": "/usr/bin:/bin"}
    argv = [
        sys.executable,
        "-I",
        "-c",
        "import sys; sys.path.insert(0, sys.argv[1]);"
        " from virtbench.cli import main; sys.argv[1:2] = []; main()",
        src,
    ]
    with open("/dev/full", "w") as full:
        r = subprocess.run(
            [*argv, "report", SUITES, "--store", str(db), "--output", str(tmp_path / "r.html")],
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            timeout=120,
        )
    assert r.returncode != 0 and "Traceback" not in r.stderr and "No space" in r.stderr
    p = subprocess.Popen(
        [*argv, "report", SUITES, "--store", str(db), "--output", str(tmp_path / "r.html")],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert p.stdout is not None
    p.stdout.readline()
    p.stdout.close()  # `| head -1`
    err = p.stderr.read() if p.stderr else ""
    p.wait(timeout=120)
    assert "Traceback" not in err and "Exception ignored" not in err, err


def test_bad_postgresql_url_is_a_clear_error(capsys):
    code, text = vb(capsys, "results", "--list", "--store", "postgresql://[::1")
    assert code == 2 and "bad results store URL" in text, text


# --- campaign values accepted before and failing later --------------------------------------
CAMPAIGN = """
[campaign]
{extra}
[[platforms]]
name = "a"
type = "native"
{platform}
[suites.cpu]
test_cases = ["sysbench-cpu-1t"]
"""


@pytest.mark.parametrize(
    ("extra", "platform", "key"),
    [
        ("cell_timeout = 1e-320", "", "campaign.cell_timeout"),
        ("cell_timeout = 0.5", "", "campaign.cell_timeout"),
        ('name = ""', "", "campaign.name"),
        ('name = "   "', "", "campaign.name"),
        ('name = "\\t"', "", "campaign.name"),
        ("", 'workdir = "/proc"', "workdir"),
        ("", 'workdir = "/sys/fs/cgroup/x"', "workdir"),
        ("", 'workdir = "//proc/self"', "workdir"),
        ("", 'workdir = "/tmp/../dev/shm/../pts"', "workdir"),
        ('scenarios = ["antagonist:cpu-load:same-cpu:quantum=99999999999s"]', "", "scenarios"),
        ('scenarios = ["antagonist:cpu-load:same-cpu:quantum=1ns"]', "", "scenarios"),
    ],
)
def test_campaign_values_that_would_fail_later_are_refused(extra, platform, key):
    text = CAMPAIGN.format(extra=extra, platform=platform)
    with pytest.raises(CampaignError) as err:
        loader.parse(text, "c.toml")
    assert "c.toml" in str(err.value) and key in str(err.value), str(err.value)


def test_fleet_refuses_a_file_that_is_not_an_inventory(tmp_path, capsys):
    if shutil.which("ansible-inventory", path=str(Path(sys.executable).parent)) is None:
        pytest.skip("ansible-core is not installed in this environment")
    notes = tmp_path / "notes.md"
    notes.write_text("# Notes\n\nSome_word\n")
    binary = tmp_path / "blob"
    binary.write_bytes(bytes(range(256)) * 4)
    for f in (notes, binary):
        code, text = vb(
            capsys, "fleet", "run", "quick", "-i", str(f), "--results-dir", str(tmp_path)
        )
        assert code == 2 and f.name in text, text
        assert "not an Ansible inventory" in text or "does not parse" in text, text


# --- markup in names the runner prints, and a store that stops taking writes ----------------
@pytest.fixture
def fake_cells(tmp_path, monkeypatch):
    """A Runner whose cells commit one sample each without running anything; `fail_at`: the
    store stops taking writes (a full disk) at that cell."""
    monkeypatch.setattr(locks, "HOST_RUNS_DIR", tmp_path / "host-runs")
    monkeypatch.setattr(runner_run.Runner, "_preflight", lambda *a: None)

    def install(fail_at: int | None = None):
        def run_cells(self, run_id, campaign, all_cells, todo):
            for n, cell in enumerate(todo):
                cid = f"{run_id}/{cell.seq:04d}"
                self.store.start_cell(cid)
                if n == fail_at:  # every later write fails, as on a full disk
                    conn = self.store.conn.conn
                    conn.execute("PRAGMA query_only = 1")
                s = Sample("events_per_s", 1.0, "events/s", True)
                self._commit(run_id, cell, Outcome("ok", [s], [], None, 0.0), {})

        monkeypatch.setattr(runner_run.Runner, "_run_cells", run_cells)

    return install


def test_markup_in_campaign_name_and_results_dir_is_printed_literally(tmp_path, fake_cells):
    from rich.console import Console

    fake_cells()
    out = tmp_path / "out.txt"
    with open(out, "w") as f:
        console = Console(file=f, markup=False, width=200)
        runner = runner_run.Runner(tmp_path / "res[/]", console)
        text = CAMPAIGN.format(extra='name = "x[/]"\nrepetitions = 1', platform="")
        run_id = runner.start(loader.parse(text, "c.toml"))
    assert runner.store.run(run_id)["status"] == "finished"
    assert "campaign x[/]" in out.read_text()


def test_a_store_that_stops_taking_writes_is_said_not_called_clean(tmp_path, fake_cells):
    fake_cells(fail_at=1)
    runner = runner_run.Runner(tmp_path / "res")
    text = CAMPAIGN.format(extra="repetitions = 3", platform="")
    with pytest.raises(Exception) as err:
        runner.start(loader.parse(text, "c.toml"))
    message = str(err.value)
    assert "stopped cleanly" not in message and "still marked running" in message, message
    assert "1 finished cells" in message
