"""runsc with the host's network: which tools get the read shim, and the shim itself (built
and preloaded natively, where it must change nothing Linux does)."""

import os
import subprocess
import sys

import pytest

from virtbench.platforms.container import gvisor, runtimes
from virtbench.serving import readiness
from virtbench.tools import which


def test_shim_only_for_its_tools_on_host_network():
    host = runtimes.get("runsc", "host")
    argv = host.exec_argv("c1", ["iperf3", "-s"], None, None)
    assert f"LD_PRELOAD={gvisor.SHIM_INSIDE}" in argv
    assert "LD_PRELOAD" not in " ".join(host.exec_argv("c1", ["nginx"], None, None))
    assert host.labels() == {"read_shim": gvisor.SHIM_LABEL}
    sandbox = runtimes.get("runsc", "bridge")
    assert "LD_PRELOAD" not in " ".join(sandbox.exec_argv("c1", ["sockperf"], None, None))
    assert sandbox.labels() == {} and runtimes.get("crun").labels() == {}


def test_exec_env_is_kept_beside_the_shim():
    argv = runtimes.get("runsc", "host").exec_argv("c1", ["/usr/bin/sockperf"], {"A": "1"}, "p")
    assert argv[argv.index("exec") :] == [
        "exec", "-env", "A=1", "-env", f"LD_PRELOAD={gvisor.SHIM_INSIDE}",
        "-pid-file", "p", "c1", "/usr/bin/sockperf",
    ]  # fmt: skip


def test_unconnected_udp_as_gvisor_reports_it():
    # gVisor's host network lists an unconnected UDP socket in state 00, Linux in 07
    table = (
        "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt\n"
        "    0: 0100007F:3CF1 00000000:0000 00 00000000:00000000 00:00000000 00000000\n"
    )
    assert readiness._listening(table, 0x3CF1, ("07", "00"))
    assert not readiness._listening(table, 0x3CF1, ("0A",))


PEER = r"""
import ctypes, os, socket, sys, threading, time
libc = ctypes.CDLL(None, use_errno=True)
l = socket.socket(); l.bind(("127.0.0.1", 0)); l.listen(1)
def peer():
    c = socket.create_connection(l.getsockname()); time.sleep(0.1); c.sendall(b"abcd"); c.close()
threading.Thread(target=peer).start()
s, _ = l.accept()
buf = ctypes.create_string_buffer(16); addr = ctypes.create_string_buffer(16)
alen = ctypes.c_uint32(16)
n = libc.recvfrom(s.fileno(), buf, 16, 0x4000, addr, ctypes.byref(alen))  # MSG_NOSIGNAL
print(n, buf.raw[:n], alen.value)
s.setblocking(False)
try:
    os.read(s.fileno(), 4); print("data")
except BlockingIOError:
    print("EAGAIN")
"""


@pytest.mark.skipif(which("cc") is None, reason="no C compiler")
def test_shim_changes_nothing_linux_does(tmp_path, monkeypatch):
    monkeypatch.setenv("VIRTBENCH_PROBES_DIR", str(tmp_path))
    shim = gvisor.build_shim()
    assert gvisor.build_shim() == shim  # cached
    env = {**os.environ, "LD_PRELOAD": str(shim)}
    r = subprocess.run([sys.executable, "-c", PEER], env=env, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    # a blocking recvfrom waits for the data, a stream socket names no source; a
    # non-blocking read still says EAGAIN (or EOF data after close)
    first, second = r.stdout.split("\n")[:2]
    assert first == "4 b'abcd' 0"
    assert second in ("EAGAIN", "data")
