"""virtbench fleet without hosts: inventory checks (the real ansible-inventory), what a poll
makes of each host's answer, the fleet record, the shipped tarball, the remote status."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
from click.testing import CliRunner

from virtbench.cli import cli
from virtbench.errors import VirtbenchError
from virtbench.fleet import ansible, inventory, remote, source, state
from virtbench.fleet.run import FleetRunner, Settings

needs_ansible = pytest.mark.skipif(
    shutil.which("ansible-inventory", path=str(Path(sys.executable).parent)) is None,
    reason="ansible-core is not installed",
)


# --- inventories ------------------------------------------------------------------------
@needs_ansible
def test_inventory_hosts_and_limit(tmp_path):
    inv = tmp_path / "hosts.yml"
    inv.write_text(
        "all:\n  children:\n    web:\n      hosts: {w1: {}, w2: {}}\n"
        "    db:\n      hosts: {d1: {ansible_host: 10.0.0.5}}\n"
    )
    assert sorted(inventory.hosts(inv)) == ["d1", "w1", "w2"]
    assert sorted(inventory.hosts(inv, "web")) == ["w1", "w2"]
    with pytest.raises(VirtbenchError, match=r"--limit 'nope\*' matches no host .*d1"):
        inventory.hosts(inv, "nope*")


@needs_ansible
@pytest.mark.parametrize(
    "name, text, says",
    [
        ("bad.ini", "[web]\nh1 ansible_host=10.0.0.1\nh2 oops\n", "got: oops"),
        ("bad.yml", "all:\n  hosts:\n    h1: {a: 1\n", "bad.yml:4:1"),
    ],
)
def test_inventory_that_does_not_parse_is_named(tmp_path, name, text, says):
    inv = tmp_path / name
    inv.write_text(text)
    with pytest.raises(VirtbenchError, match="does not parse") as err:
        inventory.hosts(inv)
    assert says in str(err.value) and str(inv) in str(err.value)


def test_missing_inventory(tmp_path):
    with pytest.raises(VirtbenchError, match="does not exist"):
        inventory.hosts(tmp_path / "nope.ini")


# --- Ansible's events -------------------------------------------------------------------
def test_digest_per_host():
    events = [
        {"event": "runner_on_ok", "event_data": {"host": "a", "task": "t", "res": {"rc": 0}}},
        {
            "event": "runner_on_failed",
            "event_data": {"host": "b", "task": "check", "res": {"msg": "non-zero", "stderr": "x"}},
        },
        {
            "event": "runner_on_unreachable",
            "event_data": {"host": "c", "task": "t", "res": {"msg": "ssh: timed out"}},
        },
        {"event": "playbook_on_stats", "event_data": {}},
    ]
    out = ansible.digest(events)
    assert out["a"].results["t"] == {"rc": 0} and not out["a"].failed
    assert out["b"].failed == "check: non-zero x"
    assert out["c"].unreachable == "ssh: timed out"


# --- polls --------------------------------------------------------------------------------
def _fleet(tmp_path, hosts=("h1",)) -> state.Fleet:
    inv = tmp_path / "inv.ini"
    inv.write_text("h1\n")
    return state.create(tmp_path / "res", "quick", inv, None, list(hosts))


def _answer(**remote) -> ansible.HostOutcome:
    return ansible.HostOutcome(results={"run status": {"stdout": json.dumps(remote), "rc": 0}})


def _runner(fleet, lost_after=2) -> tuple[FleetRunner, list[str]]:
    lines: list[str] = []
    return FleetRunner(fleet, Settings(lost_after=lost_after), lines.append), lines


def test_unreachable_polls_make_a_host_lost_after_n(tmp_path):
    fleet = _fleet(tmp_path)
    fleet.hosts["h1"].status = state.RUNNING
    runner, lines = _runner(fleet, lost_after=2)
    runner._update("h1", _answer(run_id="r1", cells_done=2, cells_total=4, alive=True))
    runner._update("h1", ansible.HostOutcome(unreachable="timed out"))
    assert fleet.hosts["h1"].status == state.RUNNING  # one missed poll is not a lost host
    runner._update("h1", ansible.HostOutcome(unreachable="timed out"))
    h = state.load(tmp_path / "res", fleet.fleet_id).hosts["h1"]
    assert h.status == state.LOST and h.run_id == "r1" and h.cells_done == 2
    assert h.message == "unreachable while running: timed out; 2 finished cells kept"
    assert any("h1: lost" in ln for ln in lines)


@pytest.mark.parametrize(
    "remote_state, status, says",
    [
        ({"exit_code": 0, "run_id": "r", "run_status": "finished"}, state.OK, ""),
        ({"exit_code": 2, "log_tail": "error: tool missing"}, state.FAILED, "exited 2: error"),
        ({"exit_code": 143, "run_id": "r", "run_status": "interrupted"}, state.LOST, "exited 143"),
        ({"run_id": "r", "run_status": "running", "alive": False}, state.LOST, "runner is gone"),
        ({"run_id": "r", "run_status": "running", "alive": True}, state.RUNNING, ""),
    ],
)
def test_what_a_poll_makes_of_the_host(tmp_path, remote_state, status, says):
    fleet = _fleet(tmp_path)
    fleet.hosts["h1"].status = state.RUNNING
    runner, _ = _runner(fleet)
    runner._update("h1", _answer(**remote_state))
    assert fleet.hosts["h1"].status == status
    assert says in fleet.hosts["h1"].message


def test_a_cut_fetch_keeps_the_store_fetched_before(tmp_path):
    fleet = _fleet(tmp_path)
    good = fleet.db("h1")
    con = sqlite3.connect(good)
    con.execute("CREATE TABLE t (x)")
    con.commit()
    con.close()
    before = good.read_bytes()
    (fleet.dir / "h1.db.incoming").write_bytes(before[:100])  # a transfer cut short
    runner, _ = _runner(fleet)
    runner._absorb("h1", _answer(snapshot=True))
    assert good.read_bytes() == before and not (fleet.dir / "h1.db.incoming").exists()


def test_record_round_trip_and_unknown_fleet(tmp_path):
    fleet = _fleet(tmp_path, ("a", "b"))
    fleet.hosts["a"].status = state.OK
    fleet.save()
    back = state.load(tmp_path / "res", fleet.fleet_id)
    assert back.hosts["a"].status == state.OK and back.hosts["b"].status == state.PENDING
    assert back.dir == fleet.dir
    with pytest.raises(VirtbenchError, match=f"no fleet run nope .*known: {fleet.fleet_id}"):
        state.load(tmp_path / "res", "nope")


def test_fleet_show_prints_every_host(tmp_path):
    fleet = _fleet(tmp_path, ("a", "b"))
    fleet.hosts["b"].status, fleet.hosts["b"].message = state.FAILED, "install: apt failed"
    fleet.save()
    out = CliRunner().invoke(
        cli, ["fleet", "show", fleet.fleet_id, "--results-dir", str(tmp_path / "res")]
    )
    assert out.exit_code == 0, out.output
    rows = [ln.split("\t") for ln in out.output.splitlines()]
    assert rows[0][:2] == ["host", "status"]
    assert rows[2][:2] == ["b", "failed"] and rows[2][-1] == "install: apt failed"


# --- what travels to a host ---------------------------------------------------------------
def test_tarball_ships_the_installable_project_and_is_reproducible(tmp_path):
    digest = source.build(tmp_path / "p.tar.gz")
    with tarfile.open(tmp_path / "p.tar.gz") as tar:
        names = tar.getnames()
        owners = {(m.uid, m.uname) for m in tar.getmembers()}
    for needed in ("install.sh", "pyproject.toml", "src/virtbench/fleet/playbooks/poll.yml"):
        assert needed in names
    assert not any(n.startswith("tests/") or n.endswith(".pyc") for n in names)
    assert owners == {(0, "root")} and names == sorted(names)
    # the same tree, built again: the same bytes, so a host's install stamp still holds
    assert source.build(tmp_path / "again.tar.gz") == digest
    assert (tmp_path / "again.tar.gz").read_bytes() == (tmp_path / "p.tar.gz").read_bytes()


def test_host_timings_by_phase(tmp_path):
    fleet = _fleet(tmp_path)
    runner, _ = _runner(fleet)
    prepare = ansible.HostOutcome(
        durations={"check the host": 0.5, "ship the project": 1.25, "install": 2.0,
                   "start the campaign": 0.25, "something new": 0.1}
    )  # fmt: skip
    runner._timed("prepare_s", 0.0, {"h1": prepare})
    poll = ansible.HostOutcome(durations={"run status": 0.5, "fetch the results": 0.75})
    runner._timed("poll_s", 0.0, {"h1": poll}, count="polls")
    runner._timed("poll_s", 0.0, {"h1": poll}, count="polls")
    t = state.load(tmp_path / "res", fleet.fleet_id).hosts["h1"].timings
    assert t == {"check_s": 0.5, "transfer_s": 1.25, "install_s": 2.0, "start_s": 0.25,
                 "other_s": 0.1, "status_s": 1.0, "fetch_s": 1.5, "polls": 2}  # fmt: skip


def test_remote_status_reads_the_store_and_snapshots_it(tmp_path):
    (tmp_path / "results").mkdir()
    con = sqlite3.connect(tmp_path / "results" / remote.STORE)
    con.execute("PRAGMA journal_mode=WAL")
    con.execute("CREATE TABLE runs (run_id, status, started_at)")
    con.execute("CREATE TABLE cells (run_id, status)")
    con.execute("INSERT INTO runs VALUES ('r1', 'running', 1)")
    con.executemany("INSERT INTO cells VALUES ('r1', ?)", [("ok",), ("running",), ("pending",)])
    con.commit()
    (tmp_path / remote.EXIT_CODE).write_text("0\n")
    got = remote.state(tmp_path)
    assert got["run_id"] == "r1" and got["cells_done"] == 1 and got["cells_total"] == 3
    assert got["snapshot"] and got["exit_code"] == 0 and not got["alive"]
    snap = sqlite3.connect(tmp_path / remote.SNAPSHOT)
    assert snap.execute("PRAGMA journal_mode").fetchone()[0] == "delete"  # one file to fetch
    assert snap.execute("SELECT COUNT(*) FROM cells").fetchone()[0] == 3
    con.close()


def test_remote_status_before_any_run(tmp_path):
    got = remote.state(tmp_path)
    assert got == {"snapshot": False, "run_id": None, "run_status": None, "alive": False}


# --- faults of the store (issue 14): a wrong URL before any host, a store gone at the end ---
def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_wrong_store_url_is_refused_before_any_host(tmp_path):
    from click.testing import CliRunner

    from virtbench.cli import cli

    inv = tmp_path / "inv.ini"
    inv.write_text("h1 ansible_host=10.217.14.98\n")
    url = f"postgresql://vb:pw@127.0.0.1:{_free_port()}/vb"
    out = CliRunner().invoke(
        cli,
        [
            "fleet",
            "run",
            "quick",
            "-i",
            str(inv),
            "--results-dir",
            str(tmp_path / "r"),
            "--store",
            url,
        ],  # fmt: skip
    )
    assert out.exit_code != 0
    assert "cannot connect to results store postgresql://vb:***@127.0.0.1" in str(out.exception)
    assert not (tmp_path / "r" / "fleet").exists()  # no host touched, no fleet record


def test_store_gone_at_gather_keeps_host_stores_and_import_later_completes(tmp_path):
    import shutil as sh

    from virtbench.fleet import gather
    from virtbench.runner.describe import describe
    from virtbench.store.db import Store

    fleet = state.create(tmp_path, "c.toml", tmp_path / "inv.ini", None, ["h1"])
    host = Store.in_dir(tmp_path / "h1")
    host.create_run("20260101-000000-aaaa", "c", "c.toml", "", 1, {}, {}, "0.1",
                    description=describe(["sysbench-cpu-1t"]))  # fmt: skip
    host.close()
    con = sqlite3.connect(tmp_path / "h1" / "virtbench.db")
    with con:  # the run took 42 s on its host
        con.execute("UPDATE runs SET started_at = 1000, finished_at = 1042")
    con.close()
    fleet.hosts["h1"].run_id = "20260101-000000-aaaa"
    sh.copy(tmp_path / "h1" / "virtbench.db", fleet.db("h1"))
    lines: list[str] = []
    url = f"postgresql://vb@127.0.0.1:{_free_port()}/vb"
    assert gather.gather(fleet, url, tmp_path, lines.append) is False
    assert fleet.db("h1").exists()  # kept
    assert any("results not imported" in ln and "cannot connect" in ln for ln in lines), lines
    assert any(f"virtbench import {fleet.db('h1')}" in ln for ln in lines), lines
    # the store is back (here: a SQLite one): the same gather imports it, once
    shared = tmp_path / "shared.db"
    assert gather.gather(fleet, str(shared), tmp_path, lines.append) is True
    assert gather.gather(fleet, str(shared), tmp_path, lines.append) is True
    st = Store(str(shared))
    assert [r["run_id"] for r in st.runs()] == ["20260101-000000-aaaa"]
    st.close()
    back = state.load(tmp_path, fleet.fleet_id)
    assert "gather_s" in back.timings
    assert back.hosts["h1"].timings["campaign_s"] == 42.0
    assert back.hosts["h1"].timings["gather_s"] >= 0


def test_remote_status_copies_the_store_only_when_a_cell_finished(tmp_path, monkeypatch):
    (tmp_path / "results").mkdir()
    con = sqlite3.connect(tmp_path / "results" / remote.STORE)
    con.execute("CREATE TABLE runs (run_id, status, started_at)")
    con.execute("CREATE TABLE cells (run_id, status)")
    con.execute("INSERT INTO runs VALUES ('r1', 'running', 1)")
    con.executemany("INSERT INTO cells VALUES ('r1', ?)", [("ok",), ("running",)])
    con.commit()
    monkeypatch.setattr(remote, "run_holder", lambda results, run_id: 4242)  # a live runner
    got = remote.state(tmp_path, known_cells=1)
    assert got["unchanged"] and not got["snapshot"] and got["alive"]
    assert (got["run_id"], got["cells_done"], got["cells_total"]) == ("r1", 1, 2)
    assert not (tmp_path / remote.SNAPSHOT).exists()
    con.execute("UPDATE cells SET status = 'ok'")
    con.commit()
    got = remote.state(tmp_path, known_cells=1)  # a cell finished: a copy to fetch
    assert got["snapshot"] and got["cells_done"] == 2 and "unchanged" not in got
    (tmp_path / remote.EXIT_CODE).write_text("0\n")  # it ended: always its last copy
    assert remote.state(tmp_path, known_cells=2)["snapshot"]
    monkeypatch.setattr(remote, "run_holder", lambda results, run_id: None)
    assert remote.state(tmp_path, known_cells=2)["snapshot"]
    con.close()


def test_offline_hosts_get_a_wheelhouse_tarball_of_its_own(tmp_path):
    from virtbench.fleet import wheelhouse

    wheels = tmp_path / "wh"
    wheels.mkdir()
    (wheels / "setuptools-84.2.1-py3-none-any.whl").write_bytes(b"PK wheel")
    (wheels / "click-8.5.1-py3-none-any.whl").write_bytes(b"PK wheel 2")
    (wheels / wheelhouse.PYTHON_FILE).write_text(wheelhouse.python_tag() + "\n")
    (wheels / "link.whl").symlink_to(wheels / "click-8.5.1-py3-none-any.whl")
    digest = wheelhouse.pack(wheels, tmp_path / "w.tar.gz")
    with tarfile.open(tmp_path / "w.tar.gz") as tar:
        names = tar.getnames()
        shipped = tar.extractfile("wheelhouse/click-8.5.1-py3-none-any.whl").read()
    # unpacked beside install.sh: wheelhouse/ holds the build requirement and the Python tag
    assert "wheelhouse/setuptools-84.2.1-py3-none-any.whl" in names
    assert "wheelhouse/PYTHON" in names
    assert "wheelhouse/link.whl" not in names  # a link in the cache is not followed
    assert shipped == b"PK wheel 2"
    assert wheelhouse.pack(wheels, tmp_path / "again.tar.gz") == digest  # reproducible
    # the project tarball stays small: the wheels go only to hosts marked offline
    source.build(tmp_path / "p.tar.gz")
    with tarfile.open(tmp_path / "p.tar.gz") as tar:
        assert not any(n.startswith("wheelhouse/") for n in tar.getnames())


def test_wheelhouse_requirements_are_the_build_and_runtime_ones():
    from virtbench.fleet import wheelhouse

    reqs = wheelhouse.requirements(source.project_root() / "pyproject.toml")
    assert any(r.startswith("setuptools") for r in reqs)  # what a host's pip build needs
    assert any(r.startswith("ansible-core") for r in reqs)
    assert not any(r.startswith(("pytest", "ruff")) for r in reqs)  # no dev extras


def test_wheelhouse_of_an_unreadable_pyproject_is_a_clear_error(tmp_path):
    from virtbench.fleet import wheelhouse

    bad = tmp_path / "pyproject.toml"
    bad.write_text("[project\n")
    with pytest.raises(VirtbenchError, match="pyproject.toml: cannot read"):
        wheelhouse.requirements(bad)


def test_prepare_offers_the_offline_install():
    text = (Path(source.__file__).parent / "playbooks" / "prepare.yml").read_text()
    assert "virtbench_offline" in text and "--offline" in text and "--venv" in text
    assert "ship the wheelhouse" in text and "ship the wheelhouse" in state.TASK_PHASE
    sh = (source.project_root() / "install.sh").read_text()
    assert "--no-index --find-links" in sh


def test_install_sh_offline_names_what_is_missing(tmp_path):
    # a copy of the tree without a wheelhouse: --offline stops at once, naming it
    shutil.copy(source.project_root() / "install.sh", tmp_path / "install.sh")
    r = subprocess.run(
        ["bash", str(tmp_path / "install.sh"), "--offline", "--venv", str(tmp_path / "v")],
        capture_output=True,
        text=True,
    )
    if os.geteuid() != 0:
        pytest.skip("install.sh re-runs itself with sudo when not root")
    assert r.returncode == 1 and "no wheelhouse" in r.stderr
    (tmp_path / "wheelhouse").mkdir()
    (tmp_path / "wheelhouse" / "PYTHON").write_text("2.7 sparc\n")
    r = subprocess.run(
        ["bash", str(tmp_path / "install.sh"), "--offline", "--venv", str(tmp_path / "v")],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 1 and "for Python 2.7 sparc" in r.stderr
    assert not (tmp_path / "v").exists()  # refused before making anything


def test_offline_hosts_from_the_inventory(tmp_path):
    # INI host and group variables, read back through the real ansible-inventory
    inv = tmp_path / "hosts.ini"
    inv.write_text(
        "[lab]\nl1 ansible_host=10.0.0.1\nl2 ansible_host=10.0.0.2 virtbench_offline=false\n"
        "[lab:vars]\nvirtbench_offline=true\n[dc]\nd1 ansible_host=10.0.1.1\n"
    )
    assert inventory.offline(inv, ["l1", "l2", "d1"]) == ["l1"]
    listing = {"_meta": {"hostvars": {"a": {"virtbench_offline": True}, "b": {}}}}
    assert inventory.offline_hosts(listing, ["a", "b", "c"]) == ["a"]
