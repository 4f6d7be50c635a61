"""The application suite once, for real, on the native platform: VbTrade on embedded Tomcat
with HSQLDB, Debian's JMeter 2.13 on the host, a 2 s dry run and 4 s measured in 2 s
intervals (about 15 s with the JVMs' start). Checks shapes and sanity, never timing."""

from __future__ import annotations

import math
import os
from pathlib import Path

import pytest

from virtbench.platforms.base import PlatformSpec
from virtbench.platforms.native import NativePlatform
from virtbench.tools import require
from virtbench.workloads import registry
from virtbench.workloads.base import RunContext

pytestmark = pytest.mark.integration


def test_daytrader_jmeter_on_native(tmp_path):
    wcls = registry.load_all()["daytrader-jmeter"]
    require([*wcls.tools, *wcls.host_tools], needed_by=wcls.name)
    params = {k: p.default for k, p in wcls.params.items()}
    params |= {"dry_run": 2, "duration": 4, "interval": 2, "users": 4, "accounts": 100}
    params |= {"quotes": 100, "heap_mib": 128, "client_heap_mib": 128, "max_error_pct": 100}
    spec = PlatformSpec("native", "native", {"workdir": str(tmp_path)})
    with NativePlatform(spec, "vb-it-app") as native:
        samples = wcls().run(native, RunContext(params=params, timeout=180))
        # the server's scratch directory (jars, database) is gone
        assert os.listdir(Path(native.workdir)) == []
    by: dict[str, list] = {}
    for s in samples:
        assert math.isfinite(s.value), s
        by.setdefault(s.metric, []).append(s)
    (tp,) = by["throughput"]
    assert tp.value > 0, tp
    assert [s.labels["interval"] for s in by["interval_throughput"]] == [0, 1]
    assert all(s.value > 0 for s in by["interval_throughput"])
    p50, p99 = by["response_time_p50_ms"][0].value, by["response_time_p99_ms"][0].value
    assert 0 <= p50 <= p99
    assert tp.labels["heap"] == "128m" and "-Xmx128m" in tp.labels["jvm_flags"]
    assert by["errors"][0].value == 0  # the app answers every action (no 500s)
    assert by["server_ready_s"][0].value > 0
    assert by["client_cpu_pct"][0].role == "client"
