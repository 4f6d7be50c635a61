"""No Python repr where a user reads (issue 39 item 5): no None, no -0.0, no seed 004 total
where its formula says nothing."""

from __future__ import annotations

from click.testing import CliRunner

from virtbench import tune
from virtbench.analysis.scores import Seed004Suite
from virtbench.cli import cli
from virtbench.report import fmt
from virtbench.report.data import seed004_applies


def test_a_change_that_rounds_to_zero_has_no_sign() -> None:
    assert fmt.signed_pct(-0.04) == "0.0%"
    assert fmt.signed_pct(-0.0) == "0.0%"
    assert fmt.pct(-0.0004) == "0.0%"
    assert fmt.signed_pct(-0.06) == "-0.1%"
    assert fmt.signed_pct(1.25, 2) == "+1.25%"
    assert fmt.signed_pct(-0.04, space=" ") == "0.0 %"


def test_platform_options_read_as_in_a_campaign() -> None:
    assert fmt.label_value(True) == "true"
    assert fmt.label_value([0, 1]) == "[0, 1]"


def _suite(configs: int, tests: int) -> Seed004Suite:
    cfgs = [(f"p{i}", "solo") for i in range(configs)]
    names = [f"t{i}" for i in range(tests)]
    return Seed004Suite("cpu", names, {}, {}, cfgs, {}, {})


def test_seed004_total_only_where_configurations_are_compared() -> None:
    assert seed004_applies(_suite(2, 2))
    assert not seed004_applies(_suite(1, 5))  # every score 1: the total counts the tests
    assert seed004_applies(_suite(3, 1))  # seed 004's Table 7: one test, many configurations


def test_tune_dry_run_says_absent_not_none(monkeypatch) -> None:
    monkeypatch.setattr(
        tune, "plan", lambda **k: [tune.Change("governor", "/sys/x", None, "performance")]
    )
    out = CliRunner().invoke(cli, ["tune", "--dry-run"])
    assert out.exit_code == 0, out.output
    assert "(absent -> performance)" in out.output and "None" not in out.output
