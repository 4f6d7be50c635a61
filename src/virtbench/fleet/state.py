"""A fleet run's record, `RESULTS/fleet/<fleet-id>/fleet.json`: what was run where, and per
host its status, times, run id, progress and what failed. Rewritten whole (atomically) at
every change, so a controller that dies leaves a record `fleet resume` continues from."""

from __future__ import annotations

import json
import secrets
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from .. import safefs
from ..errors import VirtbenchError

PENDING, RUNNING, OK, FAILED, LOST = "pending", "running", "ok", "failed", "lost"
FLEET_DIR = "fleet"
RECORD = "fleet.json"

# where a host's time goes: each playbook task (by name) in one phase of HostState.timings
TASK_PHASE = {
    "check the host": "check_s",
    "require root": "check_s",
    "ship the project": "transfer_s",
    "ship the wheelhouse": "transfer_s",
    "restore the results fetched before (the host lost its own)": "transfer_s",
    "install": "install_s",
    "start the campaign": "start_s",
    "run status": "status_s",
    "fetch the results": "fetch_s",
}


@dataclass
class HostState:
    status: str = PENDING
    started_at: float | None = None
    ended_at: float | None = None
    run_id: str | None = None
    cells_done: int = 0
    cells_total: int = 0
    message: str = ""  # what failed, or why the host is lost (Ansible's words)
    unreachable_polls: int = 0  # consecutive polls that could not reach the host
    # where this host's time went, in seconds: Ansible's task durations by phase (check_s,
    # transfer_s, install_s, start_s: prepare; status_s, fetch_s: polls; other_s), "polls"
    # (how many looked at it), and from the gather: campaign_s (its run's span in its own
    # store, the host's clock) and gather_s (importing its store)
    timings: dict[str, float] = field(default_factory=dict)

    def add_phase_times(self, durations: dict[str, float], polled: bool = False) -> None:
        for task, took in durations.items():
            key = TASK_PHASE.get(task, "other_s")
            self.timings[key] = round(self.timings.get(key, 0.0) + took, 3)
        if polled:
            self.timings["polls"] = self.timings.get("polls", 0) + 1


@dataclass
class Fleet:
    fleet_id: str
    campaign: str
    inventory: str
    limit: str | None
    created_at: float
    campaign_file: str | None = None  # the controller's copy, shipped to every host
    hosts: dict[str, HostState] = field(default_factory=dict)
    # where the controller's time went: "prepare_s", "poll_s", "polls", "gather_s" (wall
    # seconds, summed over phases) and "tasks" (task name -> seconds summed over hosts)
    timings: dict = field(default_factory=dict)
    dir: Path = field(default=Path("."), repr=False, compare=False)

    def db(self, host: str) -> Path:
        return self.dir / f"{host}.db"

    def timed(self, key: str, seconds: float, count: str | None = None) -> None:
        """Add `seconds` to timings[key] (and one to timings[count])."""
        self.timings[key] = round(self.timings.get(key, 0.0) + seconds, 3)
        if count:
            self.timings[count] = self.timings.get(count, 0) + 1

    def add_task_times(self, durations: dict[str, float]) -> None:
        tasks = self.timings.setdefault("tasks", {})
        for task, took in durations.items():
            tasks[task] = round(tasks.get(task, 0.0) + took, 3)

    def save(self) -> None:
        body = {k: v for k, v in asdict(self).items() if k != "dir"}
        text = json.dumps(body, indent=1, default=str) + "\n"
        safefs.write_file(self.dir / RECORD, text, mode=0o644, kind="state")


def new_fleet_id() -> str:
    return "f" + time.strftime("%Y%m%d-%H%M%S") + "-" + secrets.token_hex(2)


def create(
    results_dir: Path, campaign: str, inventory: Path, limit: str | None, hosts: list[str]
) -> Fleet:
    fleet_id = new_fleet_id()
    fleet = Fleet(fleet_id, campaign, str(inventory.resolve()), limit, time.time())
    fleet.dir = results_dir / FLEET_DIR / fleet_id
    safefs.make_dirs(fleet.dir.parent, 0o755)
    fleet.dir.mkdir(0o755)
    fleet.hosts = {h: HostState() for h in hosts}
    fleet.save()
    return fleet


def load(results_dir: Path, fleet_id: str) -> Fleet:
    base = results_dir / FLEET_DIR
    path = base / fleet_id / RECORD
    if not path.exists():
        known = sorted(p.parent.name for p in base.glob(f"*/{RECORD}")) if base.is_dir() else []
        raise VirtbenchError(
            f"no fleet run {fleet_id} in {base}; known: {', '.join(known) or 'none'}"
        )
    body = json.loads(path.read_text())
    hosts = {h: HostState(**s) for h, s in body.pop("hosts").items()}
    fleet = Fleet(**body, hosts=hosts)
    fleet.dir = path.parent
    return fleet
