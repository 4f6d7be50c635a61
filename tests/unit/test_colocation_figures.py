"""Pure helpers of the co-location figures (report/suites/colocation/figures.py)."""

from virtbench.analysis import colocation_steps as cs
from virtbench.report.suites.colocation import figures as fig


def _pts(metric, values):
    return [{"metric": metric, "value": v} for v in values]


def test_throughput_series_preference():
    # the workload's own throughput series wins
    pts = _pts("cpu_util", [50]) + _pts("reply_rate.1KB", [900]) + _pts("net_tx_bytes_per_s", [1e6])
    assert fig._throughput_metric(pts) == "reply_rate.1KB"
    # a server without one: the bytes it sent, if it serves the network
    assert fig._throughput_metric(_pts("net_tx_bytes_per_s", [2e6]) + _pts("cpu_util", [9])) == (
        "net_tx_bytes_per_s"
    )
    # a CPU workload: tap chatter (ARP) is not throughput
    assert fig._throughput_metric(_pts("net_tx_bytes_per_s", [140]) + _pts("cpu_util", [80])) == (
        "cpu_util"
    )
    assert fig._throughput_metric([]) is None


def test_sweep_step_as_intensity():
    params = {"mode": "capacity", "start_fraction": 0.1, "step_fraction": 0.1}
    assert cs.intensity({"step": 4, "env_params": params}) == 50.0
    absolute = {"mode": "absolute", "start_fraction": 0.1, "step_fraction": 0.1}
    assert cs.intensity({"step": 4, "offered_rate": 500, "env_params": absolute}) is None
    assert cs.intensity({"env_params": params}) is None
