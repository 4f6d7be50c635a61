"""`virtbench tune`: opt-in host settings that lower measurement noise, recorded and undone.

Each knob is a sysfs/procfs file: the CPU frequency governor (performance), turbo/boost
(off), transparent huge pages (never), TCP congestion control (cubic, as the guests') and IRQ
affinity (a housekeeping CPU, away from the CPUs that measure). What was changed is kept with
its old value in STATE, so `tune --reset` (or `virtbench cleanup` after a crash) writes every
old value back. A knob the host does not have, or refuses, is reported as such: a VM guest
has few of them.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import asdict, dataclass
from pathlib import Path

from . import cleanup, netstack, ownedtmp, safefs
from .errors import VirtbenchError

STATE = Path("/run/virtbench/tune.json")
SET, ALREADY, UNAVAILABLE, REFUSED = "set", "already", "not available here", "refused"


@dataclass
class Change:
    knob: str  # what it is for (governor, turbo, thp, tcp, irq)
    path: str  # relative to the root ("/" on a real host)
    old: str | None
    new: str
    status: str = ""


def _read(root: Path, rel: str) -> str | None:
    try:
        return (root / rel.lstrip("/")).read_text().strip()
    except OSError:
        return None


def _selected(value: str) -> str:
    """THP files list every mode and bracket the active one: 'always [madvise] never'."""
    if "[" in value:
        return value.split("[", 1)[1].split("]", 1)[0]
    return value


def plan(root: Path = Path("/"), housekeeping: int = 0) -> list[Change]:
    """What `tune` would write, each with the value it holds now."""
    out: list[Change] = []
    cpus = sorted((root / "sys/devices/system/cpu").glob("cpu[0-9]*/cpufreq/scaling_governor"))
    for gov in cpus:
        rel = "/" + str(gov.relative_to(root))
        avail = _read(root, rel.replace("scaling_governor", "scaling_available_governors"))
        if avail is not None and "performance" not in avail.split():
            continue
        out.append(Change("governor", rel, _read(root, rel), "performance"))
    if not cpus:
        out.append(Change("governor", "/sys/devices/system/cpu/cpu*/cpufreq", None, "performance"))
    turbo = [
        ("/sys/devices/system/cpu/intel_pstate/no_turbo", "1"),
        ("/sys/devices/system/cpu/cpufreq/boost", "0"),
    ]
    found = [(p, v) for p, v in turbo if _read(root, p) is not None]
    for p, v in found or turbo[:1]:
        out.append(Change("turbo", p, _read(root, p), v))
    for name in ("enabled", "defrag"):
        p = f"/sys/kernel/mm/transparent_hugepage/{name}"
        old = _read(root, p)
        out.append(Change("thp", p, _selected(old) if old is not None else None, "never"))
    # cubic, a Debian guest's default: a host on BBR paces every container's connection and
    # a bridged container then pays several times the CPU per large reply that a VM guest does not
    # (docs/network.md). New network namespaces take the host's value when made.
    cc = "/proc/sys/" + netstack.proc_path(netstack.CONGESTION_CONTROL)
    if (now := _read(root, cc)) is not None:
        out.append(Change("tcp", cc, now, "cubic"))
    for irq in sorted((root / "proc/irq").glob("[0-9]*/smp_affinity_list")):
        rel = "/" + str(irq.relative_to(root))
        out.append(Change("irq", rel, _read(root, rel), str(housekeeping)))
    for c in out:
        if c.old is None:
            c.status = UNAVAILABLE
        elif c.old == c.new:
            c.status = ALREADY
    return out


# The only files a record may name: what `plan` writes. A record naming anything else (a
# tampered or foreign tune.json) is not restored: root would write wherever it says.
KNOBS = re.compile(
    r"/sys/devices/system/cpu/cpu[0-9]+/cpufreq/scaling_governor"
    r"|/sys/devices/system/cpu/intel_pstate/no_turbo"
    r"|/sys/devices/system/cpu/cpufreq/boost"
    r"|/sys/kernel/mm/transparent_hugepage/(?:enabled|defrag)"
    r"|/proc/sys/net/ipv4/tcp_congestion_control"
    r"|/proc/irq/[0-9]+/smp_affinity_list"
)


def known_knob(rel: str) -> bool:
    return KNOBS.fullmatch(rel) is not None


def _write(root: Path, rel: str, value: str) -> bool:
    if not known_knob(rel):
        return False
    try:
        flags = os.O_WRONLY | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC
        fd = os.open(root / rel.lstrip("/"), flags)
        with os.fdopen(fd, "w") as f:
            f.write(value + "\n")
    except OSError:
        return False
    return True


@dataclass
class Record:
    """tune.json: what was changed, by which process, and whether it finished. A finished
    `tune` is the user's standing choice (undone by `tune --reset` only); one whose process
    died part way is a crash's leftover, which `cleanup` undoes."""

    changes: list[Change]
    pid: int | None = None
    start: str | None = None
    complete: bool = True

    def owner_gone(self) -> bool:
        return self.pid is None or ownedtmp.process_start_time(self.pid) != self.start


def apply(root: Path = Path("/"), housekeeping: int = 0, state: Path = STATE) -> list[Change]:
    """Write every knob that differs, record the ones written, and return the whole plan."""
    if load(state) or state.exists():
        raise RuntimeError(f"the host is already tuned ({state}); run `virtbench tune --reset`")
    changes = plan(root, housekeeping)
    written: list[Change] = []
    me = os.getpid()
    record = Record(written, me, ownedtmp.process_start_time(me), complete=False)
    for c in changes:
        if not c.status:
            c.status = SET if _write(root, c.path, c.new) else REFUSED
            if c.status == SET:
                written.append(c)
                _save(state, record)  # after each write: a crash leaves nothing unrecorded
    if written:
        record.complete = True
        _save(state, record)
    return changes


def _save(state: Path, record: Record) -> None:
    body = {
        "pid": record.pid,
        "start": record.start,
        "complete": record.complete,
        "changes": [asdict(c) for c in record.changes],
    }
    safefs.write_state(state, json.dumps(body, indent=1), mode=0o600)  # root's only


def load_record(state: Path = STATE) -> Record | None:
    """The record if there is one to believe (root-owned, not writable by others, a regular
    file; see safefs.trusted), else None. A record of the old format (a bare list) was
    written by a finished `tune`."""
    text = safefs.read_state(state)
    if text is None:
        return None
    try:
        body = json.loads(text)
        if isinstance(body, list):
            return Record([Change(**c) for c in body])
        changes = [Change(**c) for c in body["changes"]]
        start = body.get("start")
        return Record(changes, body.get("pid"), start, bool(body.get("complete")))
    except (ValueError, TypeError, KeyError, AttributeError):
        return None


def load(state: Path = STATE) -> list[Change]:
    record = load_record(state)
    return record.changes if record else []


def _untrusted(state: Path) -> bool:
    return os.path.lexists(state) and load_record(state) is None


def reset(root: Path = Path("/"), state: Path = STATE) -> list[str]:
    """Write back every recorded old value of a known knob; a line per knob. The record goes
    once done. A record that cannot be believed is refused, named."""
    if _untrusted(state):
        raise VirtbenchError(
            f"{state} is not virtbench's record (not a root-owned regular file only root can"
            " write, or not readable as one): nothing restored; check it and remove it"
        )
    lines = []
    for c in load(state):
        if not known_knob(c.path):
            lines.append(f"could not restore {c.path}: not a knob `virtbench tune` sets")
            continue
        ok = c.old is not None and _write(root, c.path, c.old)
        lines.append(f"{'restored' if ok else 'could not restore'} {c.path}: {c.new} -> {c.old}")
    state.unlink(missing_ok=True)
    return lines


def summary(state: Path = STATE) -> dict[str, int] | None:
    """What a run records: knob -> files changed, or None when the host is not tuned."""
    changes = load(state)
    if not changes:
        return None
    out: dict[str, int] = {}
    for c in changes:
        out[c.knob] = out.get(c.knob, 0) + 1
    return out


@cleanup.register("tuned host settings")
def _restore_after_crash(root: Path = Path("/"), state: Path = STATE) -> list[str]:
    """Undo a `tune` that died part way; a finished one is kept (the user asked for it)."""
    if not os.path.lexists(state):
        return []
    record = load_record(state)
    if record is None:
        return [f"left alone: {state} (not a record virtbench can believe: not root's, or"
                " writable by others)"]  # fmt: skip
    if record.complete or not record.owner_gone():
        return []  # a tuned host stays tuned: `virtbench tune --reset` undoes it
    return reset(root, state)
