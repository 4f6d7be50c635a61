"""iperf3 and sockperf parsers against real outputs captured on the development host."""

from pathlib import Path

import pytest

from virtbench.drivers.iperf3 import cpu_limit
from virtbench.drivers.iperf3 import parse as parse_iperf3
from virtbench.drivers.sockperf import parse as parse_sockperf
from virtbench.errors import WorkloadError

DATA = Path(__file__).parent.parent / "data"


def test_iperf3_tcp_two_streams():
    r = parse_iperf3((DATA / "iperf3" / "tcp_p2.json").read_text())
    assert r["received_bps"] == pytest.approx(5787038154.385, rel=1e-9)
    assert r["sent_bps"] == pytest.approx(5798130108.822, rel=1e-9)
    assert r["retransmits"] == 23
    assert r["lost_percent"] is None
    assert r["client_cpu_pct"] == pytest.approx(24.343, rel=1e-3)


def test_iperf3_udp_reports_loss_and_jitter():
    r = parse_iperf3((DATA / "iperf3" / "udp.json").read_text())
    assert r["received_bps"] == pytest.approx(1734420384.658, rel=1e-9)
    assert r["lost_percent"] == pytest.approx(88.0446, rel=1e-4)
    assert r["jitter_ms"] == pytest.approx(0.0917, rel=1e-2)
    assert r["sent_bps"] > r["received_bps"]


def test_iperf3_error_document_is_a_clear_error():
    with pytest.raises(WorkloadError, match="Connection refused"):
        parse_iperf3((DATA / "iperf3" / "refused.json").read_text())


def test_iperf3_not_json():
    with pytest.raises(WorkloadError, match="not JSON"):
        parse_iperf3("iperf3: error - unable to connect")


def test_sockperf_tcp_rtt_percentiles():
    r = parse_sockperf((DATA / "sockperf" / "tcp_pingpong.txt").read_text())
    assert r["mean"] == pytest.approx(176.903)
    assert r["stddev"] == pytest.approx(501.118)
    assert r["p50"] == pytest.approx(66.728)
    assert r["p99"] == pytest.approx(3086.037)
    assert r["p99.9"] == pytest.approx(5005.542)
    assert r["max"] == pytest.approx(8019.003)
    assert r["received"] == 8764 and r["runtime_s"] == pytest.approx(1.551)
    assert r["dropped"] == 0


def test_sockperf_udp():
    r = parse_sockperf((DATA / "sockperf" / "udp_pingpong.txt").read_text())
    assert r["p50"] == pytest.approx(67.940)
    assert r["mean"] > 0 and r["received"] > 0


def test_sockperf_connect_error():
    text = "sockperf: ERROR: Can`t connect socket (errno=111 Connection refused)\n"
    with pytest.raises(WorkloadError, match="Connection refused"):
        parse_sockperf(text)


def test_sockperf_no_valid_observations_says_what_to_do():
    text = (DATA / "sockperf" / "udp_no_valid_observations.txt").read_text()
    with pytest.raises(WorkloadError, match="no valid observations.*duration"):
        parse_sockperf(text)


@pytest.mark.parametrize(
    ("client", "server", "limit"),
    [(0.95, 70.0, "client"), (0.70, 96.0, "server"), (0.5, 40.0, "none"), (0.5, None, "none")],
)
def test_iperf3_says_which_end_was_the_limit(client, server, limit):
    # the lead's containers run: a sending client at 90-99% with the server at 64-76%
    assert cpu_limit(client, server) == limit
