"""The container platform for real: crun on this host, limits, network modes, OOM, cold starts.

Short runs only (CI budget); no timing thresholds except the CPU-time ratio of two weighted
containers, which is a share of cgroup CPU time, not a speed.
"""

import time
import urllib.request

import pytest

from virtbench import cgroups, hostnet
from virtbench.platforms.base import PlatformSpec
from virtbench.platforms.container.platform import ContainerPlatform
from virtbench.platforms.container.storage import STATE_DIR
from virtbench.workloads.base import RunContext
from virtbench.workloads.lifecycle import ContainerStartup

pytestmark = pytest.mark.integration

SPIN = ["sh", "-c", "while :; do :; done"]


def _platform(instance: str, **options) -> ContainerPlatform:
    return ContainerPlatform(PlatformSpec(instance, "container", options), instance)


def _gone(instance: str) -> None:
    assert instance not in cgroups.leftovers()
    assert not hostnet.netns_exists(instance)
    assert not any(n.startswith(instance) for n in hostnet.nft_tables())
    assert not (STATE_DIR / instance).exists()
    assert not hostnet.link_exists(f"{instance}-h")


def test_weights_1024_vs_256_on_one_cpu():
    """Two CPU-bound containers pinned to the same CPU get CPU time about 4:1."""
    big = _platform("vb-itw100", cpu_weight=1024, cpuset=[1])
    small = _platform("vb-itw200", cpu_weight=256, cpuset=[1])
    with big, small:
        hogs = [p.spawn(SPIN) for p in (big, small)]
        time.sleep(0.5)  # both running before we sample
        c0 = [p._live().cgroup.cpu_usage_s() for p in (big, small)]
        time.sleep(4)
        c1 = [p._live().cgroup.cpu_usage_s() for p in (big, small)]
        for h in hogs:
            h.stop(timeout=2)
    used = [b - a for a, b in zip(c0, c1, strict=True)]
    ratio = used[0] / max(used[1], 1e-9)
    assert 2.5 < ratio < 6, f"cpu time {used[0]:.2f}s vs {used[1]:.2f}s, ratio {ratio:.2f}"
    _gone("vb-itw100")
    _gone("vb-itw200")


@pytest.mark.parametrize("network", ["host", "bridge", "nat"])
def test_nginx_reachable_in_each_network_mode(network):
    name = {"host": "vb-itn001", "bridge": "vb-itn002", "nat": "vb-itn003"}[network]
    port = 18080 if network == "host" else 80
    conf = (
        f"daemon off; error_log stderr; pid /tmp/nginx.pid; events {{}} "
        f"http {{ access_log off; server {{ listen {port}; root /data; }} }}"
    )
    with _platform(name, network=network, storage="volume") as p:
        write = 'echo vb-ok > /data/index.html && printf %s "$1" > /tmp/nginx.conf'
        assert p.exec(["sh", "-c", write, "sh", conf]).ok
        srv = p.spawn(["nginx", "-c", "/tmp/nginx.conf"])
        host, hport = p.endpoint(port)
        body = b""
        for _ in range(50):
            try:
                body = urllib.request.urlopen(f"http://{host}:{hport}/", timeout=2).read()
                break
            except OSError:
                time.sleep(0.1)
        srv.stop()
        acct = p.accounting()
        assert acct.cgroups and acct.pids
        assert bool(acct.net_ifaces) == (network != "host")
    assert body.strip() == b"vb-ok"
    _gone(name)


def test_memory_limit_oom_is_reported():
    with _platform("vb-itoom1", memory_limit="32M") as p:
        hog = p.exec(["sh", "-c", "x=$(head -c 100000000 /dev/zero | tr '\\0' x); echo ${#x}"])
    assert not hog.ok
    assert "OOM" in hog.stderr
    _gone("vb-itoom1")


def test_cold_start_and_overlay_isolation():
    with _platform("vb-itcs01") as p:
        samples = ContainerStartup().run(p, RunContext(params={"starts": 3}, timeout=60))
        assert p.exec(["sh", "-c", "echo x > /etc/vb-written"]).ok
    by = {s.metric: s for s in samples}
    assert set(by) == {"runtime_startup_ms", "startup_ms", "prepare_ms", "run_ms", "teardown_ms"}
    assert 0 < by["startup_ms"].value <= by["run_ms"].value
    assert 0 < by["runtime_startup_ms"].value < by["startup_ms"].value
    assert "invalid" not in by["startup_ms"].labels
    from virtbench.images import rootfs

    assert not (rootfs.existing() / "etc/vb-written").exists()  # the image stays read-only
    _gone("vb-itcs01")


def test_bad_options_name_allowed_values():
    from virtbench.errors import PlatformError

    with pytest.raises(PlatformError, match="allowed: 2..262144"):
        _platform("vb-itbad1", cpu_weight=1)
    with pytest.raises(PlatformError, match="512M"):
        _platform("vb-itbad2", memory_limit="lots")
