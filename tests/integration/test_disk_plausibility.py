"""A real native baseline and a real gVisor (runsc) container measure O_DIRECT sequential reads:
a runsc figure faster than native beyond native's noise is stored invalid with its reason after
the run, and left out of the seed 004 disk score, which says so."""

import json
import subprocess
import sys

import pytest

from virtbench.analysis import plausibility
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


def test_runsc_direct_read_beyond_native_is_invalid_and_unscored(tmp_path):
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
    st = Store.open_existing(tmp_path)
    run_id = st.resolve_run("latest")
    rows = [r for r in st.sample_rows(run_id) if r["metric"] == "bandwidth_mib_s"]
    native = [r["value"] for r in rows if r["platform"] == "native"]
    gvisor = [r for r in rows if r["platform"] == "gvisor"]
    assert len(native) == 3 and len(gvisor) == 3
    assert all(r["valid"] for r in rows if r["platform"] == "native")
    refs = plausibility.references(
        rows, {("fio-seq-read", "target", "bandwidth_mib_s"): {"direct"}}
    )
    (ref,) = refs.values()
    print(f"native O_DIRECT MiB/s {[round(v) for v in native]}, limit {ref.limit:.0f}")
    print(f"runsc  O_DIRECT MiB/s {[round(r['value']) for r in gvisor]}")
    for r in gvisor:  # exactly the rule: beyond the limit <=> stored invalid, with the reason
        assert (r["value"] > ref.limit) == (not r["valid"]), r
        if not r["valid"]:
            assert "beats the host's own device" in r["invalid_reason"]
            assert "--file-access" in r["invalid_reason"]
            assert json.loads(r["labels_json"])["invalid"] == r["invalid_reason"]
    flagged = [r for r in gvisor if not r["valid"]]
    assert flagged, "gVisor's O_DIRECT read did not beat native here: nothing to check"
    data = ReportData.load(st, run_id)
    (disk,) = [s for s in data.seed004 if s.suite == "disk"]
    (test,) = disk.tests
    assert disk.maxima[test][1][0] == "native" or len(flagged) < 3
    assert len(disk.excluded[(test, ("gvisor", "solo"))]) == len(flagged)
    _html, md = build.render(st, run_id)
    assert "left out as invalid: gvisor · solo · fio-seq-read" in md
    st.close()
