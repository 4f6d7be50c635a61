"""The runner's preflight and the duet loader ask a platform's type what it does
(platforms/capabilities.py), never its name: a type registered under another name with the
same capability is treated alike."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from virtbench.campaign import loader
from virtbench.errors import CampaignError
from virtbench.platforms import registry
from virtbench.platforms.container.platform import ContainerPlatform
from virtbench.runner import run as runner_run


class HostBinaries(ContainerPlatform):
    kind = "host-binaries"  # a type whose workloads run the host's executables

    @classmethod
    def host_tools(cls) -> bool:
        return True


class BackEnd(ContainerPlatform):
    kind = "back-end"  # a type with host back-end threads outside its vCPUs

    def backend_threads(self):
        return None


@pytest.fixture(autouse=True)
def types(monkeypatch):
    registry.load_all()
    for cls in (HostBinaries, BackEnd):
        monkeypatch.setitem(registry.PLATFORMS, cls.kind, cls)


def _preflight_requires(monkeypatch, kind: str) -> list[tuple[str, ...]]:
    asked: list[tuple[str, ...]] = []
    monkeypatch.setattr(runner_run, "require", lambda tools, needed_by: asked.append(tools))
    cell = SimpleNamespace(test_case="sysbench-cpu-1t", platform=SimpleNamespace(type=kind))
    runner = SimpleNamespace(_client=lambda campaign: None)
    runner_run.Runner._preflight(runner, None, [cell])  # type: ignore[arg-type]
    return asked


def test_preflight_checks_the_tools_of_a_type_that_runs_host_binaries(monkeypatch):
    from virtbench.workloads import registry as workloads

    w = workloads.load_all()["sysbench-cpu-1t"]
    assert w.tools  # the check below would pass vacuously without tools
    assert tuple(w.tools) in _preflight_requires(monkeypatch, "host-binaries")
    assert tuple(w.tools) in _preflight_requires(monkeypatch, "native")
    assert tuple(w.tools) not in _preflight_requires(monkeypatch, "container")


DUET = """
[campaign]
order = "duet"
[[platforms]]
name = "native"
type = "native"
[[platforms]]
name = "b"
type = "{kind}"
[suites.cpu]
test_cases = ["sysbench-cpu-1t"]
"""


def test_duet_refuses_a_type_with_host_back_end_threads(monkeypatch):
    monkeypatch.setattr("os.sched_getaffinity", lambda pid: {0, 1, 2, 3})
    with pytest.raises(CampaignError) as err:
        loader.parse(DUET.format(kind="back-end"), "d.toml")
    assert err.value.key == "platforms[1].type" and "duet" in str(err.value)
    loader.parse(DUET.format(kind="host-binaries"), "d.toml")  # no back end: accepted
