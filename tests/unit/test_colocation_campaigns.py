"""The shipped co-location campaigns carry the papers' file sizes and a quick variant each."""

import re

import pytest

from virtbench.campaign import loader

SEED_000_KB = [1, 4, 10, 30, 50, 70, 100]  # seed 000 §IV
SEED_003_KB = [1, 10, 30, 50, 70, 100, 200]  # seed 003 §3


def _sizes(name: str) -> list[int]:
    return loader.load(name).tests[0].params["file_sizes"]


def test_full_campaigns_carry_the_papers_sizes():
    assert _sizes("colocation-web") == SEED_000_KB
    assert _sizes("consolidation") == SEED_003_KB


@pytest.mark.parametrize("full", ["colocation-web", "consolidation"])
def test_quick_variant_is_a_subset_with_a_measured_header(full):
    big, quick = loader.load(full), loader.load(f"{full}-quick")
    assert set(_sizes(f"{full}-quick")) < set(_sizes(full))
    assert {p.name for p in quick.platforms} < {p.name for p in big.platforms}
    assert {s.text() for s in quick.scenarios} <= {s.text() for s in big.scenarios}
    # the quick header states a measured wall time; a full one too once its pieces are all
    # measured (bench/campaign_runtime.py), else it says it is an estimate
    assert re.search(r"(?m)^# Run time: measured .*min", quick.text), quick.text[:600]
    full = re.search(r"(?m)^# Run time: (measured .*(h|min)|estimated)", big.text)
    assert full, big.text[:600]


def test_weights_both_ways_in_the_consolidation_campaigns():
    for name in ("consolidation", "consolidation-quick"):
        texts = {s.text() for s in loader.load(name).scenarios}
        assert {"weights:1:4:1", "weights:1:1:4"} <= texts
