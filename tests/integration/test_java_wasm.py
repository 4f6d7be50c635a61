"""SciMark on the JVM, a multi-threaded JMH sample and the C kernels natively and under
wasmtime, each once on the native platform with tiny sizes (about 25 s). Shapes and sanity
only, never timing thresholds."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from virtbench.platforms.base import PlatformSpec
from virtbench.platforms.native import NativePlatform
from virtbench.tools import require
from virtbench.workloads import registry
from virtbench.workloads.base import RunContext

pytestmark = pytest.mark.integration

TINY = {
    "scimark": {"iterations": 2, "min_time": 0.05},
    "jmh-threads": {"warmup_iterations": 1, "iterations": 2, "threads": 2},
    "scimark-c": {"iterations": 2, "min_time": 0.05},
    "scimark-wasm": {"iterations": 2, "min_time": 0.05},
}


@pytest.fixture(scope="module")
def native(tmp_path_factory):
    root = tmp_path_factory.mktemp("vb-jw")
    with NativePlatform(PlatformSpec("native", "native", {"workdir": str(root)}), "vb-it") as p:
        yield p
    assert not (root / "vb-it").exists()


def test_every_test_case_is_exercised():
    names = {w.name for s in ("java", "wasm") for w in registry.by_suite(s)}
    assert names == set(TINY)


@pytest.mark.parametrize("name", sorted(TINY))
def test_runs_once_on_native(native, name):
    wcls = registry.load_all()[name]
    require(wcls.tools, needed_by=name)
    params = {k: p.default for k, p in wcls.params.items()} | TINY[name]
    samples = wcls().run(native, RunContext(params=params, timeout=120))
    assert {s.metric for s in samples} == {m.name for m in wcls.metrics}
    for s in samples:
        assert math.isfinite(s.value) and s.value > 0, s
        assert "invalid" not in s.labels, s
    # the scratch directory is gone: nothing left behind in the environment
    assert not [p for p in Path(native.workdir).iterdir() if p.name.startswith("vb-")]


CONTAINER = ("scimark", "jmh-threads", "scimark-c", "scimark-wasm")


@pytest.fixture(scope="module")
def container():
    from virtbench.platforms.container.platform import ContainerPlatform

    spec = PlatformSpec("vb-itjava", "container", {})
    with ContainerPlatform(spec, "vb-itjava") as p:
        yield p


@pytest.mark.parametrize("name", CONTAINER)
def test_runs_once_in_a_container(container, name):
    """The JRE comes with the shared image; the jars, the harness and the static kernel
    binary are copied in with put_file."""
    wcls = registry.load_all()[name]
    params = {k: p.default for k, p in wcls.params.items()} | TINY[name]
    samples = wcls().run(container, RunContext(params=params, timeout=120))
    assert {s.metric for s in samples} == {m.name for m in wcls.metrics}
    assert all(math.isfinite(s.value) and s.value > 0 for s in samples)
    if name == "scimark-wasm":  # the image's copy of the runtime, run by the image's python3
        assert samples[0].labels["wasm_python"] == "/usr/bin/python3"
        assert samples[0].labels["wasm_runtime"].startswith("wasmtime ")
