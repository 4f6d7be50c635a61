"""Co-location's asks of a workload are capabilities (workloads/capabilities.py), not fields
of the generic contract: `Workload` and `RunContext` carry none of them."""

import dataclasses

from virtbench.scenarios import rates
from virtbench.workloads.base import RunContext, Workload
from virtbench.workloads.capabilities import (
    OfferedRate,
    RateSchedule,
    ServedSizes,
    SoloPeakRetry,
    StepsTogether,
)
from virtbench.workloads.web import HttperfSweep, WrkMax


def test_the_generic_contract_carries_no_co_location():
    for name in ("rate_param", "size_param", "schedule_param", "top_rate_param"):
        assert not hasattr(Workload, name), name
    assert not hasattr(Workload, "points_together") and not hasattr(Workload, "unsaturated")
    fields = {f.name for f in dataclasses.fields(RunContext)}
    assert not fields & {"lockstep", "client_parties"}
    assert RunContext.__annotations__["remote"] == "CellClient | None"  # typed


def test_the_web_sweeps_offer_what_they_declare():
    for cap in (OfferedRate, ServedSizes, RateSchedule, SoloPeakRetry, StepsTogether):
        assert isinstance(HttperfSweep, cap), cap
    assert isinstance(WrkMax, ServedSizes) and isinstance(WrkMax(), StepsTogether)
    for cap in (OfferedRate, RateSchedule, SoloPeakRetry):
        assert not isinstance(WrkMax, cap), cap


def test_a_workload_without_the_capabilities_has_no_co_location_params():
    class Plain(Workload):
        suite, name, description = "cpu", "plain", "a one-shot tool"
        params = {"rate": None}  # a parameter so named is not an offered rate

    assert rates.rate_param(Plain) is None
    assert rates.size_param(Plain) is None
    assert rates.schedule_param(Plain) is None
    assert rates.rate_param(HttperfSweep) == "rate"
    assert rates.schedule_param(HttperfSweep) == "schedule"
