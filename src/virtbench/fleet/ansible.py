"""Run one of the fleet's playbooks through ansible-runner and digest its events into one
outcome per host: unreachable, failed (the task and Ansible's message) or what each task
returned."""

from __future__ import annotations

import contextlib
import os
import sys
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from ..errors import VirtbenchError

# Ansible keeps quiet about an inventory it cannot parse (it warns, then sees no host):
# these make that an error that names the file and the line.
STRICT_INVENTORY = {
    "ANSIBLE_INVENTORY_UNPARSED_FAILED": "True",
    "ANSIBLE_INVENTORY_ANY_UNPARSED_IS_FAILED": "True",
}


@dataclass
class HostOutcome:
    unreachable: str | None = None  # Ansible's message when the host could not be reached
    failed: str | None = None  # "task: message" of the first task that failed
    results: dict[str, dict] = field(default_factory=dict)  # task name -> its result
    # task name -> seconds Ansible took for it on this host (where the fleet's time goes)
    durations: dict[str, float] = field(default_factory=dict)


def playbook(name: str) -> Path:
    return Path(str(resources.files("virtbench.fleet") / "playbooks" / name))


def ansible_env() -> dict[str, str]:
    """The ansible CLIs of virtbench's own environment come first on PATH."""
    bin_dir = str(Path(sys.executable).parent)
    return {"PATH": f"{bin_dir}:{os.environ.get('PATH', '')}", **STRICT_INVENTORY}


def message(res: dict) -> str:
    """Ansible's own words for a failed or unreachable result, on one line."""
    parts = [str(res.get("msg") or "").strip()]
    for key in ("stderr", "module_stderr", "stdout"):
        text = str(res.get(key) or "").strip()
        if text and text not in parts[0]:
            parts.append(text[-600:])
            break
    text = " ".join(p for p in parts if p).replace("\r", "").replace("\n", " ")
    return text[:1200] or "no message"


def digest(events) -> dict[str, HostOutcome]:
    outcomes: dict[str, HostOutcome] = {}
    for ev in events:
        data = ev.get("event_data") or {}
        host = data.get("host")
        if not host:
            continue
        out = outcomes.setdefault(host, HostOutcome())
        kind, task, res = ev.get("event"), data.get("task", ""), data.get("res") or {}
        if kind in ("runner_on_ok", "runner_on_failed", "runner_on_skipped"):
            with contextlib.suppress(TypeError, ValueError):
                took = float(data.get("duration") or 0.0)
                out.durations[task] = out.durations.get(task, 0.0) + took
        if kind == "runner_on_unreachable":
            out.unreachable = message(res)
        elif kind == "runner_on_failed" and not data.get("ignore_errors"):
            out.failed = out.failed or f"{task}: {message(res)}"
        elif kind in ("runner_on_ok", "runner_on_skipped"):
            out.results[task] = res
    return outcomes


def play(
    name: str,
    inventories: list[Path],
    hosts: list[str],
    extravars: dict,
    data_dir: Path,
    forks: int,
) -> dict[str, HostOutcome]:
    """Run playbook `name` on `hosts`; every host gets an outcome (a host Ansible never
    reported on is counted unreachable)."""
    import ansible_runner

    data_dir.mkdir(parents=True, exist_ok=True)
    try:
        r = ansible_runner.run(
            private_data_dir=str(data_dir),
            playbook=str(playbook(name)),
            inventory=[str(p) for p in inventories],
            limit=",".join(hosts),
            extravars=extravars,
            envvars=ansible_env(),
            forks=max(1, min(forks, len(hosts))),
            quiet=True,
            rotate_artifacts=10,
        )
    except Exception as exc:  # ansible-runner's own errors (not the hosts')
        raise VirtbenchError(f"ansible-runner could not run {name}: {exc}") from exc
    outcomes = digest(r.events)
    if not outcomes and r.rc != 0:  # Ansible stopped before any host: its own error
        tail = r.stdout.read()[-1500:].strip() if r.stdout else ""
        raise VirtbenchError(f"ansible-playbook {name} failed (rc {r.rc}): {tail}")
    for host in hosts:
        out = outcomes.setdefault(host, HostOutcome())
        if not out.unreachable and not out.failed and not out.results:
            out.unreachable = f"Ansible reported nothing for this host (runner status {r.status})"
    return outcomes
