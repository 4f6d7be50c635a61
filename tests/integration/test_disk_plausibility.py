"""A real disk ceiling measured on this host; a real native baseline and a real gVisor (runsc)
container measure O_DIRECT sequential reads: every runsc figure is stored invalid by mechanism
(its sentry's cache), whatever its size, and left out of the seed 004 disk score, which says so;
native figures are judged by the ceiling the run's host facts hold."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from virtbench import diskceiling
from virtbench.analysis import plausibility
from virtbench.ceiling import cache, measure
from virtbench.report import build
from virtbench.report.data import ReportData
from virtbench.store.db import Store

pytestmark = pytest.mark.integration

CAMPAIGN = """
[campaign]
name = "disk-plausibility"
repetitions = 3
warmup = 0
order = "sequential"
baseline = "native"

[[platforms]]
name = "native"
type = "native"

[[platforms]]
name = "gvisor"
type = "container"
runtime = "runsc"
network = "host"

[suites.disk]
test_cases = ["fio-seq-read"]
size_mib = 64
runtime = 2
direct = [1]
"""


def test_a_real_ceiling_measurement_on_this_host(tmp_path):
    c = measure.measure("/var/tmp", passes=2, runtime_s=1)
    print({p: [round(v) for v in c.passes[p]["bandwidth_mib_s"]] for p in diskceiling.PATTERNS})
    assert c.key == measure.key_of("/var/tmp") and c.iodepth == measure.IODEPTH
    for pattern in diskceiling.PATTERNS:
        assert len(c.passes[pattern]["bandwidth_mib_s"]) == 2
        assert c.median(pattern, "bandwidth_mib_s") > 1  # MiB/s: a device, not nothing
        assert c.limit(pattern, "iops") >= 1.25 * c.median(pattern, "iops")
    assert not [p for p in Path("/var/tmp").iterdir() if p.name.startswith(".vb-ceiling-")]
    path = cache.save(c, tmp_path / "ceiling")
    assert cache.load(c.key, tmp_path / "ceiling") == c and path.stat().st_mode & 0o077 == 0


def test_runsc_direct_read_is_invalid_by_mechanism_and_unscored(tmp_path):
    campaign = tmp_path / "disk.toml"
    campaign.write_text(CAMPAIGN)
    out = subprocess.run(
        [sys.executable, "-m", "virtbench.cli", "run", str(campaign)]
        + ["--results-dir", str(tmp_path), "--no-report"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert "disk ceiling of" in out.stdout  # found in the cache, or measured now: said so
    st = Store.open_existing(tmp_path)
    run_id = st.resolve_run("latest")
    host = json.loads(st.run(run_id)["host_json"])
    (ceiling,) = plausibility.ceilings(host)  # one device holds native's and runsc's data
    rows = [r for r in st.sample_rows(run_id) if r["metric"] == "bandwidth_mib_s"]
    native = [r for r in rows if r["platform"] == "native"]
    gvisor = [r for r in rows if r["platform"] == "gvisor"]
    limit = ceiling.limit("read 1M", "bandwidth_mib_s")
    print(f"ceiling read 1M {ceiling.median('read 1M', 'bandwidth_mib_s'):.0f}, limit {limit:.0f}")
    print(f"native O_DIRECT MiB/s {[round(r['value']) for r in native]}")
    print(f"runsc  O_DIRECT MiB/s {[round(r['value']) for r in gvisor]}")
    assert len(native) == 3 and len(gvisor) == 3
    for r in native:  # native is judged by the ceiling too: valid exactly when below it
        assert bool(r["valid"]) == (r["value"] <= limit), r
    for r in gvisor:  # whatever its figure
        labels = json.loads(r["labels_json"])
        assert labels["direct_io"].startswith("cached:gVisor (runsc")
        assert not r["valid"] and r["invalid_reason"].startswith("O_DIRECT not honoured: gVisor")
    data = ReportData.load(st, run_id)
    (disk,) = [s for s in data.seed004 if s.suite == "disk"]
    (test,) = disk.tests
    assert len(disk.excluded[(test, ("gvisor", "solo"))]) == 3
    assert (test, ("gvisor", "solo")) not in disk.test_scores
    _html, md = build.render(st, run_id)
    assert "left out as invalid: gvisor · solo · fio-seq-read" in md
    st.close()
