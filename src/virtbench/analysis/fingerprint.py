"""Can two runs be compared? Their host fingerprints (the host facts stored with each run,
hostinfo.facts) side by side: what differs, whether it matters, and what is unknown.

What matters moves figures by itself: CPU model and microcode, kernel, frequency governor,
turbo, SMT, what the host runs on, and the versions of the tools the compared test cases
(and platforms) run. The rest (THP, C-states, cgroup version, KVM flavour, core count,
memory, OS, Python, virtbench) is listed as a note. A fact missing from a run (stored before
virtbench recorded it) is unknown: said, never a refusal.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from .. import labelkeys

MATTERS = ("cpu_model", "microcode", "kernel", "governor", "turbo", "smt", "virtualization")
# matter when both runs record them; runs stored before they were recorded say nothing
# (no "unknown" line: hostinfo.hypervisor() came with issue 14, `tuned` with `virtbench tune`)
MATTERS_IF_KNOWN = ("hypervisor", "tuned")
# the TCP defaults (congestion control, qdisc, buffers): matter, when both runs record them,
# to test cases that run a network tool (or whose tools are unknown); a note to the rest
NET_STACK = "net_stack"
NET_TOOLS = frozenset({"httperf", "wrk", "ab", "iperf3", "sockperf", "netperf", "nginx"})
NOTED = (
    "cores",
    "memory_bytes",
    "thp",
    "cpuidle_driver",
    "cpuidle_governor",
    "cgroup",
    "kvm",
    "os",
    "python",
    "virtbench",
)
TOOLS_USED = "tools_used"  # test case -> tools it runs (absent in runs before it was stored)
TOOL_VERSIONS = "tool_versions"


@dataclass(frozen=True)
class Difference:
    key: str  # a fact name, or "tool <name>"
    a: Any
    b: Any
    matters: bool

    @property
    def text(self) -> str:
        return f"{self.key}: {_show(self.a)} (A) vs {_show(self.b)} (B)"


@dataclass(frozen=True)
class Gate:
    differences: list[Difference]
    unknown: list[str]  # facts one run does not record

    @property
    def comparable(self) -> bool:
        return not any(d.matters for d in self.differences)

    @property
    def mattering(self) -> list[Difference]:
        return [d for d in self.differences if d.matters]


def _show(v: Any) -> str:
    return "not readable" if v is None else str(v)


def tools_of(host: dict[str, Any], test_cases: Iterable[str]) -> set[str] | None:
    """The tools a run's test cases ran, or None when the run did not record them."""
    used = host.get(TOOLS_USED)
    if not isinstance(used, dict):
        return None
    return {t for tc in test_cases for t in used.get(tc, ())}


def compare(
    host_a: dict[str, Any],
    host_b: dict[str, Any],
    test_cases: Iterable[str] = (),
    platform_tools_used: Iterable[str] = (),
) -> Gate:
    """Fingerprint of A against B for a comparison of `test_cases`."""
    cases = list(test_cases)
    diffs: list[Difference] = []
    unknown: list[str] = []
    for key in MATTERS_IF_KNOWN:
        if key in host_a and key in host_b and host_a[key] != host_b[key]:
            diffs.append(Difference(key, host_a[key], host_b[key], True))
    for key in (*MATTERS, *NOTED):
        if key not in host_a or key not in host_b:
            if key in MATTERS or key == "virtbench":
                side = "A" if key not in host_a else "B"
                both = key not in host_a and key not in host_b
                unknown.append(f"{key}: unknown in {'A and B' if both else side}")
            continue
        if host_a[key] != host_b[key]:
            diffs.append(Difference(key, host_a[key], host_b[key], key in MATTERS))
    ta, tb = tools_of(host_a, cases), tools_of(host_b, cases)
    if ta is None or tb is None:
        unknown.append("which tools the test cases use: unknown; every tool version compared")
        relevant = None
    else:
        relevant = ta | tb | set(platform_tools_used)
    net_a, net_b = host_a.get(NET_STACK), host_b.get(NET_STACK)
    if net_a is not None and net_b is not None and net_a != net_b:
        matters = relevant is None or bool(relevant & NET_TOOLS)
        diffs.append(Difference(NET_STACK, net_a, net_b, matters))
    va, vb = host_a.get(TOOL_VERSIONS) or {}, host_b.get(TOOL_VERSIONS) or {}
    for tool in sorted(set(va) | set(vb)):
        if va.get(tool) != vb.get(tool):
            matters = relevant is None or tool in relevant
            a, b = va.get(tool, "absent"), vb.get(tool, "absent")
            diffs.append(Difference(f"tool {tool}", a, b, matters))
    return Gate(diffs, unknown)


def engines_of(cells: Iterable[tuple[str, dict[str, Any]]]) -> dict[str, dict[str, Any]]:
    """platform -> the engine configuration its cells recorded (platform label `engine`,
    platforms/engine_config.py), from (platform, cell labels) pairs; the first cell that
    has one speaks for the platform (a run provisions each platform the same way)."""
    out: dict[str, dict[str, Any]] = {}
    for platform, labels in cells:
        engine = (labels.get(labelkeys.PLATFORM) or {}).get(labelkeys.ENGINE)
        if isinstance(engine, dict) and platform not in out:
            out[platform] = engine
    return out


def engine_differences(
    a: dict[str, Any] | None, b: dict[str, Any] | None, where: str
) -> list[Difference]:
    """How two engine configurations differ: each differing setting matters (gVisor's
    platform or directfs, Docker's storage driver, QEMU's accelerator move figures by
    themselves). A side that recorded none (a run stored before) says nothing."""
    if not a or not b:
        return []
    return [
        Difference(f"engine {where} {key}", a.get(key, "absent"), b.get(key, "absent"), True)
        for key in sorted(set(a) | set(b))
        if a.get(key) != b.get(key)
    ]
