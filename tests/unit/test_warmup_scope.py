"""`warmup_scope`: a warm-up per scenario (the default) or once per platform and test case."""

from __future__ import annotations

import pytest

from virtbench.campaign import expand, loader
from virtbench.errors import CampaignError
from virtbench.runner.run import warmup_key

CAMPAIGN = """
[campaign]
name = "w"
repetitions = 2
warmup = 1
{scope}
scenarios = ["solo", "identical", "idle-neighbours:1"]

[[platforms]]
name = "native"
type = "native"

[[platforms]]
name = "native2"
type = "native"

[suites.web]
test_cases = ["wrk-max"]
"""


def _warmups(scope_line: str) -> list[tuple[str, ...]]:
    """Which cells a run would warm up first, in run order (as Runner._run_cells keys them)."""
    campaign = loader.parse(CAMPAIGN.format(scope=scope_line), "w.toml")
    out, warmed = [], set()
    for cell in expand.expand(campaign):
        key = (cell.platform.name, *warmup_key(cell, campaign.settings.warmup_scope))
        if key not in warmed:
            warmed.add(key)
            out.append(key)
    return out


def test_default_warms_every_scenario_up_platform_scope_once_per_platform():
    assert len(_warmups("")) == 6  # 2 platforms x 3 scenarios
    assert _warmups('warmup_scope = "platform"') == [("native", "wrk-max"), ("native2", "wrk-max")]


def test_a_bad_scope_names_the_key_and_the_allowed_values():
    with pytest.raises(CampaignError, match=r"warmup_scope.*scenario, platform"):
        loader.parse(CAMPAIGN.format(scope='warmup_scope = "cell"'), "w.toml")
