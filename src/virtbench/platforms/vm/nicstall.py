"""A guest NIC whose transmit ring stalled: what QEMU and the guest say, and a kick.

Seen under TCG on a 2-core host (docs/colocation.md, "A VM target's NIC can stall"): while
neighbour guests boot or stop beside a running target, the target's virtio-net transmit
ring sometimes stops for good. The guest has made buffers available past the index at which
QEMU asked to be notified (avail_event) but never notified it; by the ring's event-index
rule it will not notify again, QEMU never looks, the ring fills and the guest's watchdog
fires ("NETDEV WATCHDOG ... transmit queue 0 timed out"): its server is unreachable. A link
reset inside the guest does not help (the ring keeps its indices). Writing the queue's index
to the device's notify register (what the guest driver's kick does) makes QEMU take the
waiting buffers, and the ring runs again. The facts go into the error or the log, the kick
into the platform's labels (guest_nic_kicks), never hidden.
"""

from __future__ import annotations

import contextlib
import re
import time
from dataclasses import dataclass
from pathlib import Path

from .agent import Agent, AgentError
from .guest import run as guest_run
from .jsonsock import ChannelError
from .qmp import Qmp, QmpError

WATCHDOG = re.compile(r"NETDEV WATCHDOG|TX timeout on queue")
GUEST_IFACE = "eth0"
TX_QUEUE = 1  # virtio-net's queues: receive 0, transmit 1 (one queue pair)
_GUEST_FACTS = (
    f"cd /sys/class/net/{GUEST_IFACE}/statistics && "
    "echo tx_packets=$(cat tx_packets) rx_packets=$(cat rx_packets) "
    "tx_dropped=$(cat tx_dropped)"
)
# A transitional virtio-pci device (QEMU's default on the root bus) has a legacy I/O BAR whose
# QUEUE_NOTIFY register (offset 16) takes a queue index; /dev/port writes it byte by byte,
# and the first byte is the index. Without one: the modern notify capability (vendor 0x09,
# cfg_type 2: BAR, offset, multiplier; QEMU maps queue n's notify_off to n and reads the
# queue from the address), mapped through /sys's resource file, which a kernel with
# CONFIG_IO_STRICT_DEVMEM refuses (EINVAL) while the driver holds the BAR.
_KICK = r"""
import mmap, os, struct, sys
iface, queue = sys.argv[1], int(sys.argv[2])
dev = os.path.realpath(f"/sys/class/net/{iface}/device/..")
for line in open(dev + "/resource"):
    start, _end, flags = (int(x, 16) for x in line.split())
    if flags & 0x100 and start:  # IORESOURCE_IO
        fd = os.open("/dev/port", os.O_WRONLY)
        os.pwrite(fd, struct.pack("<H", queue), start + 16)
        print(f"kicked queue {queue} of {os.path.basename(dev)} at I/O port {start + 16:#x}")
        sys.exit(0)
cfg = open(dev + "/config", "rb").read()
ptr = cfg[0x34]
while ptr:
    if cfg[ptr] == 0x09 and cfg[ptr + 3] == 2:
        off, _length, mult = struct.unpack_from("<III", cfg, ptr + 8)
        path = f"{dev}/resource{cfg[ptr + 4]}"
        m = mmap.mmap(os.open(path, os.O_RDWR | os.O_SYNC), os.path.getsize(path))
        at = off + queue * mult
        m[at:at + 2] = struct.pack("<H", queue)
        print(f"kicked queue {queue} of {os.path.basename(dev)} at {path}+{at:#x}")
        sys.exit(0)
    ptr = cfg[ptr + 1]
sys.exit("no virtio-pci notify register in " + dev)
"""


@dataclass(frozen=True)
class Ring:
    """One virtqueue as QEMU holds it and as it is in guest memory."""

    queue: int
    taken: int  # QEMU's last_avail_idx: buffers it has taken
    used: int  # QEMU's used index
    in_use: int  # taken, not yet returned
    avail: int | None  # the guest's avail.idx in guest memory (None: not readable)
    avail_event: int | None  # the index QEMU asked to be notified at

    @property
    def waiting(self) -> int:
        """Buffers the guest made available that QEMU has not taken."""
        return 0 if self.avail is None else (self.avail - self.taken) % 0x10000

    def text(self) -> str:
        return (
            f"{'tx' if self.queue == TX_QUEUE else 'rx'}: guest avail {self.avail}, "
            f"QEMU took {self.taken}, used {self.used}, in use {self.in_use}, "
            f"asked to be notified at {self.avail_event}"
        )


def watchdog_lines(serial_log: Path, limit: int = 2) -> list[str]:
    """The guest kernel's last transmit-timeout lines in its serial log."""
    try:
        text = serial_log.read_text(errors="replace")
    except OSError:
        return []
    return [line.strip() for line in text.splitlines() if WATCHDOG.search(line)][-limit:]


def _word(qmp: Qmp, addr: int) -> int | None:
    """A 16-bit word of guest physical memory (HMP `xp`: "0000000000001000: 0x0164")."""
    with contextlib.suppress(QmpError, ChannelError, OSError, ValueError):
        return int(qmp.hmp(f"xp /1hx {addr}").split(":")[-1].strip(), 16)
    return None


def rings(qmp: Qmp) -> list[Ring]:
    """virtio-net's receive and transmit rings (x-query-virtio-queue-status, QEMU >= 7.2;
    [] where QEMU cannot say)."""
    out: list[Ring] = []
    with contextlib.suppress(QmpError, ChannelError, OSError, KeyError):
        for dev in qmp.command("x-query-virtio"):
            if dev.get("name") != "virtio-net":
                continue
            for queue in (0, TX_QUEUE):
                st = qmp.command("x-query-virtio-queue-status", path=dev["path"], queue=queue)
                avail, used, num = st["vring-avail"], st["vring-used"], st["vring-num"]
                out.append(
                    Ring(
                        queue,
                        st["last-avail-idx"],
                        st["used-idx"],
                        st["inuse"],
                        _word(qmp, avail + 2) if avail else None,
                        _word(qmp, used + 4 + 8 * num) if used else None,
                    )
                )
            break
    return out


def stalled_tx(qmp: Qmp, settle_s: float = 1.0) -> Ring | None:
    """The transmit ring if buffers wait in it and QEMU takes none of them over `settle_s`."""
    first = {r.queue: r for r in rings(qmp)}.get(TX_QUEUE)
    if first is None or first.waiting == 0:
        return None
    time.sleep(settle_s)
    again = {r.queue: r for r in rings(qmp)}.get(TX_QUEUE)
    if again is None or again.waiting == 0 or again.taken != first.taken:
        return None
    return again


def guest_facts(agent: Agent, timeout: float = 10.0) -> str:
    try:
        r = guest_run(agent, ["sh", "-c", _GUEST_FACTS], timeout, None)
    except (AgentError, ChannelError, OSError) as exc:
        return f"guest agent: {exc}"
    return " ".join((r.stdout or r.stderr).split())


def describe(serial_log: Path, qmp: Qmp | None, agent: Agent | None) -> str:
    """One line for an error message: the guest's watchdog, the rings, the guest's counters
    (each part only when it could be read)."""
    parts = []
    lines = watchdog_lines(serial_log)
    if lines:
        parts.append("guest kernel: " + lines[-1])
    if qmp is not None:
        found = rings(qmp)
        if found:
            parts.append("virtio-net " + "; ".join(r.text() for r in found))
    if agent is not None:
        parts.append("guest: " + guest_facts(agent))
    return " | ".join(parts)


def kick_tx(agent: Agent, timeout: float = 20.0) -> tuple[bool, str]:
    """Notify QEMU of the transmit ring from inside the guest: (done, what was written where
    or why not)."""
    argv = ["python3", "-c", _KICK, GUEST_IFACE, str(TX_QUEUE)]
    try:
        r = guest_run(agent, argv, timeout, None)
    except (AgentError, ChannelError, OSError) as exc:
        return False, str(exc)
    text = (r.stdout if r.ok else r.stderr or r.stdout).strip()
    return r.ok, text or f"exit {r.returncode}"
