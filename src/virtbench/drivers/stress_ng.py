"""stress-ng: one stressor's bogo-op rates, read from the YAML file it writes (--yaml)."""

from __future__ import annotations

from collections.abc import Sequence

import yaml

from ..errors import WorkloadError

# the two rates every stressor reports: per wall second and per usr+sys CPU second
REAL_TIME_RATE = "bogo-ops-per-second-real-time"
CPU_TIME_RATE = "bogo-ops-per-second-usr-sys-time"


def argv(
    stressor: str,
    workers: int,
    extra_args: Sequence[str],
    duration: int,
    workdir: str,
    report: str,
) -> list[str]:
    """`workers` instances (-1: one per online CPU) for `duration` s, temp files in `workdir`,
    metrics written to `report`."""
    return [
        "stress-ng",
        f"--{stressor}",
        str(workers),
        *extra_args,
        "--timeout",
        f"{duration}s",
        "--metrics-brief",
        "--temp-path",
        workdir,
        "--yaml",
        report,
    ]


def parse_yaml(text: str, stressor: str, what: str) -> dict[str, float]:
    """The metrics entry for `stressor` from a `stress-ng --yaml FILE` document."""
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise WorkloadError(f"{what}: stress-ng YAML does not parse: {exc}") from exc
    entries = doc.get("metrics") if isinstance(doc, dict) else None
    if not isinstance(entries, list):
        raise WorkloadError(f"{what}: no 'metrics' list in stress-ng YAML")
    for entry in entries:
        if isinstance(entry, dict) and entry.get("stressor") == stressor:
            try:
                return {k: float(v) for k, v in entry.items() if k != "stressor" and v is not None}
            except (TypeError, ValueError) as exc:
                raise WorkloadError(f"{what}: non-numeric stress-ng metric: {exc}") from exc
    raise WorkloadError(f"{what}: stressor '{stressor}' missing from stress-ng YAML metrics")


def parse_rates(text: str, stressor: str, what: str) -> dict[str, float]:
    """parse_yaml, and both bogo-op rates are there."""
    m = parse_yaml(text, stressor, what)
    for key in (REAL_TIME_RATE, CPU_TIME_RATE):
        if key not in m:
            raise WorkloadError(f"{what}: '{key}' missing from stress-ng YAML")
    return m


def too_few_ops(m: dict[str, float]) -> str | None:
    """Why the rates are no measurement: a handful of bogo-ops cannot give a rate to better
    than a few percent; None when they are one."""
    if m.get("bogo-ops", 0) < 10:
        return f"only {m.get('bogo-ops', 0):.0f} bogo-ops: run longer"
    return None
