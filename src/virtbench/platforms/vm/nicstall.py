"""A guest NIC whose transmit queue stalled: what QEMU and the guest say, and a reset.

Seen under TCG on a 2-core host (docs/colocation.md, "A VM target's NIC can stall"): when
neighbour guests boot or stop beside a running target, the target's virtio-net transmit
queue sometimes stops for good (guest: "NETDEV WATCHDOG ... transmit queue 0 timed out");
QEMU still delivers frames to the guest but gets none back, so its server is unreachable.
Bringing the guest's link down and up restarts the queue. The facts below tell the user
which side stopped; the reset is recorded on the cell, never hidden.
"""

from __future__ import annotations

import contextlib
import re
from pathlib import Path
from typing import Any

from .agent import Agent, AgentError
from .guest import run as guest_run
from .jsonsock import ChannelError
from .qmp import Qmp, QmpError

WATCHDOG = re.compile(r"NETDEV WATCHDOG|TX timeout on queue")
GUEST_IFACE = "eth0"
# sh -c: one agent round trip; the counters say whether the guest still sends anything
_GUEST_FACTS = (
    f"cd /sys/class/net/{GUEST_IFACE}/statistics && "
    "echo tx_packets=$(cat tx_packets) rx_packets=$(cat rx_packets) "
    "tx_dropped=$(cat tx_dropped); grep -h virtio /proc/interrupts | tr -s ' ' | head -8"
)
_RESET = f"ip link set {GUEST_IFACE} down && sleep 0.2 && ip link set {GUEST_IFACE} up"


def watchdog_lines(serial_log: Path, limit: int = 2) -> list[str]:
    """The guest kernel's last transmit-timeout lines in its serial log."""
    try:
        text = serial_log.read_text(errors="replace")
    except OSError:
        return []
    return [line.strip() for line in text.splitlines() if WATCHDOG.search(line)][-limit:]


def queue_status(qmp: Qmp) -> list[str]:
    """QEMU's view of each virtio-net queue (x-query-virtio-queue-status, QEMU >= 7.2):
    the guest made buffers available (avail) that QEMU has not taken (last-avail) = QEMU
    stopped; all taken and used but the guest did not reclaim them = the guest stopped."""
    out: list[str] = []
    with contextlib.suppress(QmpError, ChannelError, OSError):
        for dev in qmp.command("x-query-virtio"):
            if dev.get("name") != "virtio-net":
                continue
            for queue in (0, 1):  # receive, transmit
                st: dict[str, Any] = qmp.command(
                    "x-query-virtio-queue-status", path=dev["path"], queue=queue
                )
                out.append(
                    f"{'rx' if queue == 0 else 'tx'}: avail {st.get('shadow-avail-idx')}, "
                    f"taken {st.get('last-avail-idx')}, used {st.get('used-idx')}, "
                    f"in use {st.get('inuse')}, signalled {st.get('signalled-used')}"
                    + _ring_words(qmp, st)
                )
    return out


def _ring_words(qmp: Qmp, st: dict[str, Any]) -> str:
    """The ring's index words as they are in guest memory now (QEMU's copies above may be
    older): avail.idx, the guest's used_event, used.idx and QEMU's avail_event."""
    avail, used, num = st.get("vring-avail"), st.get("vring-used"), st.get("vring-num")
    if not avail or not used or not num:
        return ""
    words = []
    for what, addr in (
        ("avail.idx", avail + 2),
        ("used_event", avail + 4 + 2 * num),
        ("used.idx", used + 2),
        ("avail_event", used + 4 + 8 * num),
    ):
        with contextlib.suppress(QmpError, ChannelError, OSError):
            text = qmp.hmp(f"xp /1hx {addr}")  # "0000000001234: 0x0164"
            words.append(f"{what}={int(text.split(':')[-1].strip(), 16)}")
    return f" (guest memory: {' '.join(words)})" if words else ""


def guest_facts(agent: Agent, timeout: float = 10.0) -> str:
    try:
        r = guest_run(agent, ["sh", "-c", _GUEST_FACTS], timeout, None)
    except (AgentError, ChannelError, OSError) as exc:
        return f"guest agent: {exc}"
    return " ".join((r.stdout or r.stderr).split())


def describe(serial_log: Path, qmp: Qmp | None, agent: Agent | None) -> str:
    """One line for an error message: the guest's watchdog, QEMU's queues, the guest's
    counters (each part only when it could be read)."""
    parts = []
    lines = watchdog_lines(serial_log)
    if lines:
        parts.append("guest kernel: " + lines[-1])
    if qmp is not None:
        queues = queue_status(qmp)
        if queues:
            parts.append("QEMU virtio-net " + "; ".join(queues))
    if agent is not None:
        parts.append("guest: " + guest_facts(agent))
    return " | ".join(parts)


def reset_link(agent: Agent, timeout: float = 20.0) -> str | None:
    """Bring the guest's link down and up (its driver restarts the queues). None when done,
    else why not."""
    try:
        r = guest_run(agent, ["sh", "-c", _RESET], timeout, None)
    except (AgentError, ChannelError, OSError) as exc:
        return str(exc)
    return None if r.ok else (r.stderr or r.stdout).strip() or f"exit {r.returncode}"
