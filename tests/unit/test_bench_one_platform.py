"""bench/one_platform.py: a campaign copy that runs one platform's cells beside the same
hosts and neighbours (how colocation-web's run time is measured in pieces)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from virtbench.campaign import expand, loader, source

BENCH = Path(__file__).resolve().parents[2] / "bench" / "one_platform.py"


@pytest.fixture(scope="module")
def one_platform():
    spec = importlib.util.spec_from_file_location("one_platform", BENCH)
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    sys.modules["one_platform"] = module
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


@pytest.mark.parametrize("platform", ["crun-in-hvm", "native"])
def test_the_copy_runs_the_shipped_cells_of_one_platform(one_platform, platform):
    text = source.read(loader.resolve("colocation-web"))
    copy = one_platform.one_platform(
        text, platform, one_platform.needed("colocation-web", platform)
    )
    whole = [c for c in expand.expand(loader.load("colocation-web")) if c.platform.name == platform]
    part = expand.expand(loader.parse(copy, "copy.toml"))
    assert [(c.platform.name, c.scenario, c.repetition, c.params) for c in part] == [
        (c.platform.name, c.scenario, c.repetition, c.params) for c in whole
    ]
    kept = {p.name for p in loader.parse(copy, "copy.toml").platforms}
    if platform == "crun-in-hvm":  # its host and the three neighbours; not native, crun-in-vm
        assert kept == {"crun-in-hvm", "vm-e1000", "vm-virtio", "container"}
        assert part[0].platform.host.name == "vm-e1000"


def test_an_unknown_platform_names_the_allowed_ones(one_platform):
    with pytest.raises(Exception, match="no platform 'nope'; allowed: native, container"):
        one_platform.needed("colocation-web", "nope")


def test_a_part_runs_the_chosen_scenarios_beside_their_neighbours_only(one_platform):
    chosen = {"solo", "identical"}
    text = one_platform.some_scenarios(
        source.read(loader.resolve("colocation-web")), chosen, "colocation-web.toml"
    )
    copy = one_platform.one_platform(
        text, "vm-virtio", one_platform.needed("colocation-web", "vm-virtio", chosen)
    )
    parsed = loader.parse(copy, "copy.toml")
    assert {p.name for p in parsed.platforms} == {"vm-virtio"}
    assert {c.scenario for c in expand.expand(parsed)} == chosen
    assert "# Fig. 4: two identical servers" in copy  # the kept entries keep their comments

    rest = {"heterogeneous:container", "heterogeneous:vm-e1000"}
    text = one_platform.some_scenarios(source.read(loader.resolve("colocation-web")), rest, "x")
    kept = one_platform.needed("colocation-web", "vm-virtio", rest)
    assert kept == {"vm-virtio", "container", "vm-e1000"}
    assert {
        c.scenario
        for c in expand.expand(
            loader.parse(one_platform.one_platform(text, "vm-virtio", kept), "copy.toml")
        )
    } == rest


def test_an_unknown_scenario_names_the_file_and_the_allowed_ones(one_platform):
    text = source.read(loader.resolve("colocation-web"))
    with pytest.raises(Exception, match=r"cw.toml: scenarios: no nope; allowed: solo, idle-n"):
        one_platform.some_scenarios(text, {"solo", "nope"}, "cw.toml")
