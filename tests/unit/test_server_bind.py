"""Servers listen only on the address their client uses (issue 16 item 7)."""

from __future__ import annotations

from contextlib import contextmanager, suppress

from virtbench.drivers import iperf3, nginx, sockperf
from virtbench.platforms.base import PlatformSpec
from virtbench.platforms.native import NativePlatform
from virtbench.workloads import network, web
from virtbench.workloads.base import RunContext

from .fakes import FakePlatform


def test_iperf3_server_binds_to_the_given_address():
    assert iperf3.server_argv(5201, "127.0.0.1")[-2:] == ["-B", "127.0.0.1"]
    assert "-B" not in iperf3.server_argv(5201)


def test_sockperf_server_binds_to_the_given_address():
    argv = sockperf.server_argv(11111, True, "10.77.0.5")
    assert argv[argv.index("-i") + 1] == "10.77.0.5"


def test_nginx_listens_on_the_given_address_only():
    text = nginx.conf("/w/vb-nginx", 18080, 1, [], "127.0.0.1")
    assert "listen 127.0.0.1:18080 backlog" in text
    assert "listen [::1]:18080 " in nginx.conf("/w", 18080, 1, [], "::1")


def test_native_platform_listens_on_loopback():
    assert NativePlatform(PlatformSpec("n", "native"), "vb-test").listen_address() == "127.0.0.1"


class _BoundPlatform(FakePlatform):
    def listen_address(self):
        return "10.77.0.9"


def _server_argv(monkeypatch, module, workload) -> list[str]:
    """The server argv a workload builds for port 12000 on a platform bound to 10.77.0.9."""
    seen: list[list[str]] = []

    @contextmanager
    def fake_serve(platform, make_argv, ctx, **kw):
        seen.append(make_argv(12000))
        raise RuntimeError("stop here")
        yield

    monkeypatch.setattr(module, "serve", fake_serve)
    params = {k: p.default for k, p in workload.params.items()} | {"file_sizes": [1]}
    ctx = RunContext(params=params)
    with suppress(RuntimeError):
        workload.run(_BoundPlatform("p", []), ctx)
    return seen[0]


def test_network_and_web_servers_bind_to_the_platforms_address(monkeypatch):
    iperf = _server_argv(monkeypatch, network, network.Iperf3Tcp())
    assert iperf[iperf.index("-B") + 1] == "10.77.0.9"
    sock = _server_argv(monkeypatch, network, network.SockperfTcpRR())
    assert sock[sock.index("-i") + 1] == "10.77.0.9"
    written: list[str] = []
    monkeypatch.setattr(nginx, "write_text", lambda p, path, text: written.append(text))
    _server_argv(monkeypatch, web, web.WrkMax())
    assert "listen 10.77.0.9:12000 " in written[0]
