"""Antagonists: endless loads that run beside a target as neighbours (seed 001 §6.3).

  cpu-load          an endless arithmetic loop on a 4 KiB table that stays in L1 (vb-load cpu)
  memory-load       an endless memcpy of 9 MiB back and forth (vb-load mem; `mb` changes it)
  stress-ng-<name>  one stress-ng stressor by name, e.g. stress-ng-cache, stress-ng-matrix

Each reports what it got done while it ran (a neighbour sample, role neighbour-N), so a
report can show that the antagonist really loaded the machine. They are not test cases:
scenarios start them with `scenarios.neighbours.Neighbours`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .. import labelkeys, probes_build
from ..drivers.probe import load_json
from ..platforms.base import ExecResult, Platform
from .base import Sample

_STRESSOR = re.compile(r"^[a-z][a-z0-9-]*$")
# stress-ng --metrics-brief: "metrc: [pid] cache  435490  1.99  0.67  0.02  219076.47 ..."
_METRC = re.compile(
    r"metrc:\s+\[\d+\]\s+(?P<name>[\w-]+)\s+(?P<ops>\d+)\s+(?P<real>[\d.]+)\s+[\d.]+\s+[\d.]+"
    r"\s+(?P<rate>[\d.]+)"
)


@dataclass(frozen=True)
class Antagonist:
    name: str
    mb: float = 9.0  # memory-load copy size in MiB

    @property
    def kind(self) -> str:
        if self.name.startswith("stress-ng-"):
            return "stress-ng"
        return self.name

    def tools(self) -> tuple[str, ...]:
        return ("stress-ng",) if self.kind == "stress-ng" else ()

    def argv(
        self,
        platform: Platform,
        *,
        max_seconds: float,
        policy: str | None = None,
        priority: int | None = None,
    ) -> list[str]:
        """The command, inside `platform`; it ends by itself after max_seconds at the latest
        (a leaked antagonist must not load the host forever)."""
        if self.kind == "stress-ng":
            argv = [
                "stress-ng",
                f"--{self.name.removeprefix('stress-ng-')}",
                "1",
                "--timeout",
                f"{int(max_seconds)}s",
                "--metrics-brief",
            ]
            if policy and policy != "other":  # stress-ng's --sched sets the stressor's policy
                argv += ["--sched", policy, "--sched-prio", str(priority or 1)]
            return argv
        path = platform.put_file(probes_build.probe_path("load"))
        argv = [path, "cpu" if self.kind == "cpu-load" else "mem"]
        if self.kind == "memory-load":
            argv += ["--mb", f"{self.mb:g}"]
        argv += ["--max-seconds", f"{int(max_seconds)}"]
        if policy:
            argv += ["--policy", policy]
            if priority is not None and priority >= 0:
                argv += ["--priority", str(priority)]
        return argv

    def samples(self, result: ExecResult, role: str) -> list[Sample]:
        """What the antagonist got done; an empty or failed report is labelled invalid."""
        labels: dict[str, object] = {labelkeys.ANTAGONIST: self.name}
        if self.kind == "stress-ng":
            m = _METRC.search(result.stdout + result.stderr)
            if not m:
                labels[labelkeys.INVALID] = "stress-ng printed no metrics (did it start?)"
                return [Sample("antagonist_bogo_ops_per_s", 0.0, "ops/s", True, role, labels)]
            labels[labelkeys.BOGO_OPS] = int(m.group("ops"))
            return [
                Sample("antagonist_bogo_ops_per_s", float(m["rate"]), "ops/s", True, role, labels)
            ]
        try:
            data = load_json(result.stdout, f"{self.name} ({role})")
        except Exception as exc:  # noqa: BLE001 - a neighbour's report must not fail the cell
            labels[labelkeys.INVALID] = f"no report from the antagonist: {exc}"
            return [Sample("antagonist_rate", 0.0, "1/s", True, role, labels)]
        labels.update(
            {labelkeys.SECONDS: data.get("seconds"), labelkeys.POLICY: data.get("policy")}
        )
        if self.kind == "memory-load":
            mb_s = data["rate_per_s"] * data["bytes_per_iteration"] / 1e6
            return [Sample("antagonist_copy_mb_per_s", mb_s, "MB/s", True, role, labels)]
        return [Sample("antagonist_loops_per_s", data["rate_per_s"], "1/s", True, role, labels)]


BUILTIN = ("cpu-load", "memory-load")


def get(name: str, mb: float = 9.0) -> Antagonist:
    """An antagonist by name; ValueError names the allowed ones."""
    if name in BUILTIN:
        return Antagonist(name, mb)
    if name.startswith("stress-ng-") and _STRESSOR.match(name.removeprefix("stress-ng-")):
        return Antagonist(name, mb)
    raise ValueError(
        f"unknown antagonist '{name}'; allowed: {', '.join(BUILTIN)}, "
        "stress-ng-<stressor> (e.g. stress-ng-cache, stress-ng-matrix)"
    )
