"""Drive a campaign across a fleet: prepare every host (ship, install, start in the
background), then poll them all until each is ok, failed or lost. Each poll fetches the
host's store, so what a host measured is kept here even if the host goes away."""

from __future__ import annotations

import base64
import json
import shutil
import sqlite3
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import yaml

from ..errors import VirtbenchError
from ..store import readonly
from . import ansible, inventory, source, wheelhouse
from .state import FAILED, LOST, OK, PENDING, RUNNING, Fleet, HostState

SIGNAL_EXITS = (130, 143)  # the run was interrupted on the host: resume continues it


@dataclass
class Settings:
    forks: int = 50
    poll_interval: float = 15.0
    lost_after: int = 3  # consecutive unreachable polls before a running host is lost
    timeout: int = 7 * 24 * 3600  # the longest a host's run may take (`timeout` there)


class FleetRunner:
    def __init__(self, fleet: Fleet, settings: Settings, log: Callable[[str], None]) -> None:
        self.fleet, self.settings, self.log = fleet, settings, log
        self.work = fleet.dir / "ansible"  # ansible-runner's artifacts: every event, per phase
        self._ended_polls: dict[str, int] = {}

    # --- entry points -------------------------------------------------------------------
    def run(self) -> None:
        self._prepare(list(self.fleet.hosts), {})
        self._follow()

    def resume(self) -> None:
        todo = [h for h, s in self.fleet.hosts.items() if s.status != OK]
        if not todo:
            self.log("every host is ok: nothing to resume")
            return
        self.log(f"resuming {', '.join(todo)}")
        restart: dict[str, dict] = {}
        for host, out in self._poll(todo, incremental=False).items():
            st = self.fleet.hosts[host]
            if out.unreachable:
                self._set(host, LOST, message=f"still unreachable: {out.unreachable}")
                continue
            remote = self._absorb(host, out)
            if remote.get("alive"):
                self._set(host, RUNNING, message="")  # the run went on without us
            elif remote.get("run_status") == "finished" and self._all_done(st):
                self._set(host, OK, ended_at=time.time(), message="")
            elif st.run_id:
                restart[host] = {"vb_resume_id": st.run_id}
                if self.fleet.db(host).exists() and not remote.get("snapshot"):
                    restart[host]["vb_restore_db"] = str(self.fleet.db(host).resolve())
            else:
                restart[host] = {}  # nothing measured there yet: start the campaign
        if restart:
            self._prepare(list(restart), restart)
        self._follow()

    def _wheels(self, hosts: list[str]) -> Path | None:
        """The offline hosts' wheelhouse as a tarball in the work directory; None when none
        of `hosts` is marked offline, or the controller cannot build one (an offline host's
        install then says it has none)."""
        try:
            if not inventory.offline(Path(self.fleet.inventory), hosts):
                return None
            wheels = wheelhouse.ensure(source.project_root() / "pyproject.toml", self.log)
        except VirtbenchError as exc:
            self.log(f"warning: no wheelhouse, hosts with virtbench_offline cannot install: {exc}")
            return None
        target = self.work / "virtbench-wheels.tar.gz"
        wheelhouse.pack(wheels, target)
        return target

    # --- phases -------------------------------------------------------------------------
    def _prepare(self, hosts: list[str], per_host: dict[str, dict]) -> None:
        self.work.mkdir(parents=True, exist_ok=True)
        tarball = self.work / "virtbench-src.tar.gz"
        extravars = self._common() | {
            "vb_source": str(tarball.resolve()),
            "vb_source_id": source.build(tarball),
            "vb_async_timeout": self.settings.timeout,
        }
        wheels = self._wheels(hosts)
        if wheels is not None:  # shipped to the hosts marked virtbench_offline only
            extravars["vb_wheels"] = str(wheels.resolve())
        if self.fleet.campaign_file:  # a campaign file travels in the first task's command
            text = (self.fleet.dir / self.fleet.campaign_file).read_bytes()
            extravars["vb_campaign_b64"] = base64.b64encode(text).decode()
        else:
            extravars["vb_campaign"] = self.fleet.campaign
        for h in hosts:
            self._set(h, PENDING, started_at=time.time(), ended_at=None, message="")
        self.log(f"preparing {len(hosts)} hosts: ship, install, start (Ansible)")
        t0 = time.monotonic()
        outcomes = ansible.play(
            "prepare.yml",
            self._inventories(per_host),
            hosts,
            extravars,
            self.work,
            self.settings.forks,
        )
        self._timed("prepare_s", t0, outcomes)
        tarball.unlink(missing_ok=True)
        (self.work / "virtbench-wheels.tar.gz").unlink(missing_ok=True)
        for host, out in outcomes.items():
            if out.unreachable:
                self._set(
                    host,
                    LOST,
                    ended_at=time.time(),
                    message=f"unreachable while preparing: {out.unreachable}",
                )
            elif out.failed:
                self._set(host, FAILED, ended_at=time.time(), message=out.failed)
            else:
                self._set(host, RUNNING, unreachable_polls=0)

    def _follow(self) -> None:
        """Poll the running hosts until none runs."""
        while running := [h for h, s in self.fleet.hosts.items() if s.status == RUNNING]:
            time.sleep(self.settings.poll_interval)
            for host, out in self._poll(running).items():
                self._update(host, out)

    def _poll(self, hosts: list[str], incremental: bool = True) -> dict[str, ansible.HostOutcome]:
        """One look at `hosts`; `incremental`: a host whose run finished no cell since the
        store fetched from it sends no new copy."""
        extravars = self._common() | {"vb_fetch_dir": str(self.fleet.dir.resolve())}
        known = {
            h: {"vb_known_cells": self.fleet.hosts[h].cells_done}
            for h in hosts
            if incremental and self.fleet.hosts[h].run_id and self.fleet.db(h).exists()
        }
        t0 = time.monotonic()
        outcomes = ansible.play(
            "poll.yml", self._inventories(known), hosts, extravars, self.work, self.settings.forks
        )
        self._timed("poll_s", t0, outcomes, count="polls")
        return outcomes

    def _timed(
        self,
        key: str,
        t0: float,
        outcomes: dict[str, ansible.HostOutcome],
        count: str | None = None,
    ) -> None:
        self.fleet.timed(key, time.monotonic() - t0, count)
        for host, out in outcomes.items():
            self.fleet.add_task_times(out.durations)
            if host in self.fleet.hosts:
                self.fleet.hosts[host].add_phase_times(out.durations, polled=count is not None)
        self.fleet.save()

    # --- one host's poll ----------------------------------------------------------------
    def _update(self, host: str, out: ansible.HostOutcome) -> None:
        st = self.fleet.hosts[host]
        if out.unreachable or out.failed:
            # a poll that fails says nothing of the run (it may go on): only N in a row
            # make the host lost
            st.unreachable_polls += 1
            if st.unreachable_polls >= self.settings.lost_after:
                kept = f"; {st.cells_done} finished cells kept" if st.cells_done else ""
                why = (
                    f"unreachable while running: {out.unreachable}"
                    if out.unreachable
                    else (f"could not be polled: {out.failed}")
                )
                self._set(host, LOST, ended_at=time.time(), message=why + kept)
            else:
                self.fleet.save()
            return
        st.unreachable_polls = 0
        remote = self._absorb(host, out)
        rc = remote.get("exit_code")
        if rc is not None:
            if rc == 0:
                self._set(host, OK, ended_at=time.time(), message="")
            else:
                status = LOST if rc in SIGNAL_EXITS else FAILED
                self._set(
                    host,
                    status,
                    ended_at=time.time(),
                    message=f"virtbench run exited {rc}: {_tail(remote)}",
                )
        elif remote.get("run_status") == "running" and not remote.get("alive"):
            # no runner holds a run still marked running: it was killed with the host's
            # processes (a reboot, an OOM kill); its finished cells are in the fetched store
            self._set(
                host,
                LOST,
                ended_at=time.time(),
                message=f"the run's runner is gone on the host: {_tail(remote)}",
            )
        elif remote.get("run_id") and not remote.get("alive"):
            # the run ended but its exit status never came: give the shell a few polls to
            # write it, then go by what the store says
            self._ended_polls[host] = self._ended_polls.get(host, 0) + 1
            if self._ended_polls[host] > 3:
                ok = remote.get("run_status") == "finished"
                self._set(
                    host,
                    OK if ok else LOST,
                    ended_at=time.time(),
                    message="" if ok else f"run {remote.get('run_status')}: {_tail(remote)}",
                )
        else:
            self.fleet.save()

    def _absorb(self, host: str, out: ansible.HostOutcome) -> dict:
        """Take the host's reported state and its freshly fetched store (if any)."""
        st = self.fleet.hosts[host]
        res = out.results.get("run status") or {}
        try:
            remote = ansible_json(res.get("stdout", ""))
        except ValueError:
            remote = {}
        incoming = self.fleet.dir / f"{host}.db.incoming"
        if incoming.exists():
            if _readable(incoming):
                incoming.replace(self.fleet.db(host))
            else:  # a fetch cut short: keep the store fetched before
                incoming.unlink()
        if remote.get("run_id"):
            st.run_id = remote["run_id"]
            st.cells_done = remote.get("cells_done", 0)
            st.cells_total = remote.get("cells_total", 0)
        return remote

    # --- helpers ------------------------------------------------------------------------
    def _common(self) -> dict:
        return {"vb_fleet_id": self.fleet.fleet_id}

    def _inventories(self, per_host: dict[str, dict]) -> list[Path]:
        """The user's inventory, plus this fleet's per-host variables when there are any."""
        sources = [Path(self.fleet.inventory)]
        if per_host:
            extra = self.work / "fleet-hostvars.yml"
            extra.write_text(yaml.safe_dump({"all": {"hosts": per_host}}))
            sources.append(extra)
        return sources

    def _set(self, host: str, status: str, **changes) -> None:
        st = self.fleet.hosts[host]
        before = st.status
        st.status = status
        for k, v in changes.items():
            setattr(st, k, v)
        self.fleet.save()
        if status != before or status in (FAILED, LOST):
            progress = (
                f" run {st.run_id}, {st.cells_done}/{st.cells_total} cells" if st.run_id else ""
            )
            why = f": {st.message}" if st.message else ""
            self.log(f"{host}: {status}{progress}{why}")

    @staticmethod
    def _all_done(st: HostState) -> bool:
        return st.cells_total > 0 and st.cells_done == st.cells_total


def ansible_json(text: str) -> dict:
    value = json.loads(text) if text.strip() else {}
    if not isinstance(value, dict):
        raise ValueError(text)
    return value


def _tail(remote: dict) -> str:
    lines = [ln for ln in str(remote.get("log_tail", "")).splitlines() if ln.strip()]
    return " | ".join(lines[-3:]) or "no output"


def _readable(db: Path) -> bool:
    try:
        con = readonly.connect(db)  # leaves nothing beside the file it may replace
        try:
            return con.execute("PRAGMA quick_check").fetchone()[0] == "ok"
        finally:
            con.close()
    except sqlite3.Error:
        return False


def ship_campaign(fleet: Fleet, campaign: str) -> None:
    """A campaign given as a file travels with the fleet (a copy beside fleet.json)."""
    path = Path(campaign)
    if path.is_file():
        shutil.copyfile(path, fleet.dir / "campaign.toml")
        fleet.campaign_file = "campaign.toml"
        fleet.save()
