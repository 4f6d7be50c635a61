"""gVisor (runsc, host network) runs the network suite's tools: iperf3 3 of 3 repetitions
and both sockperf round trips, through the CLI, with the read shim recorded on every cell
(platforms/container/gvisor.py says what gVisor's host network gets wrong without it)."""

import json
import subprocess
import sys

import pytest

from virtbench.platforms.container import gvisor
from virtbench.store.db import Store
from virtbench.tools import which

pytestmark = pytest.mark.integration

CAMPAIGN = """
[campaign]
name = "gvisor-network"
repetitions = 3
warmup = 0
order = "sequential"

[[platforms]]
name = "gvisor"
type = "container"
runtime = "runsc"
network = "host"

[suites.network]
test_cases = ["iperf3-tcp", "sockperf-tcp-rr", "sockperf-udp-rr"]
duration = 2
"""


@pytest.mark.skipif(which("runsc") is None, reason="runsc not installed")
def test_runsc_network_suite_passes_every_repetition(tmp_path):
    campaign = tmp_path / "gvisor.toml"
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
    cells = st.cells(run_id)
    assert len(cells) == 9
    assert all(c.status == "ok" for c in cells), [(c.test_case, c.error) for c in cells]
    for c in cells:
        assert json.loads(c.labels_json)["platform"]["read_shim"] == gvisor.SHIM_LABEL
    rows = st.sample_rows(run_id)
    tput = [r["value"] for r in rows if r["metric"] == "throughput"]
    rtt = {r["test_case"]: r["value"] for r in rows if r["metric"] == "rtt_mean_us"}
    print(f"runsc iperf3-tcp Mbit/s {[round(v) for v in tput]}, sockperf rtt µs {rtt}")
    assert len(tput) == 3 and all(v > 0 for v in tput)
    assert set(rtt) == {"sockperf-tcp-rr", "sockperf-udp-rr"}
    st.close()
