"""A real dockerd that fails to start (issue 15): virtbench's own start path with every path
of the daemon moved under tmp_path, so the host's daemons and virtbench's are untouched. The
error shows dockerd's log; neither dockerd nor the containerd it starts is left running."""

from __future__ import annotations

import subprocess

import pytest

from virtbench import tools
from virtbench.errors import PlatformError
from virtbench.platforms.container import dockerd

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(tools.which("dockerd") is None, reason="docker.io not installed"),
]


def _private_daemon(monkeypatch, tmp_path) -> None:
    run = tmp_path / "run"
    for attr, path in (
        ("RUN_DIR", run),
        ("DATA_ROOT", tmp_path / "data"),
        ("SOCKET", run / "docker.sock"),
        ("PID_FILE", run / "dockerd.pid"),
        ("LOG_FILE", run / "dockerd.log"),
        ("MODE_FILE", run / "userland-proxy"),
        ("EXEC_ROOT", run / "exec"),
        ("CHAINS_MARK", run / "iptables-chains"),
    ):
        monkeypatch.setattr(dockerd, attr, path)


def _left(tmp_path) -> list[str]:
    """Live processes whose command line names tmp_path (dockerd, containerd, shims)."""
    r = subprocess.run(["pgrep", "-af", str(tmp_path)], capture_output=True, text=True)
    return [ln for ln in r.stdout.splitlines() if "pgrep" not in ln]


def test_bogus_flag(monkeypatch, tmp_path):
    _private_daemon(monkeypatch, tmp_path)
    real = dockerd.daemon_argv
    monkeypatch.setattr(dockerd, "daemon_argv", lambda p: [*real(p), "--vb-bogus-flag"])
    with pytest.raises(PlatformError) as e:
        dockerd._start(True)
    msg = str(e.value)
    print(f"\n{msg}")
    assert msg.startswith("dockerd exited"), msg
    assert "vb-bogus-flag" in msg.split("its log", 1)[1], msg  # dockerd's own words
    assert _left(tmp_path) == []
    assert not dockerd.MODE_FILE.exists()


def test_unusable_data_root(monkeypatch, tmp_path):
    """A data root that is a file: dockerd gets further (containerd may be up) and then
    fails; its log says why and nothing it started survives."""
    _private_daemon(monkeypatch, tmp_path)
    data = tmp_path / "data-file"
    data.write_text("not a directory\n")
    real = dockerd.daemon_argv
    monkeypatch.setattr(
        dockerd, "daemon_argv", lambda p: [*real(p), "--data-root", str(data)]
    )  # the last --data-root wins
    with pytest.raises(PlatformError) as e:
        dockerd._start(True)
    msg = str(e.value)
    print(f"\n{msg}")
    assert msg.startswith("dockerd exited"), msg
    log = msg.split("its log", 1)[1]
    assert "not a directory" in log or str(data) in log, msg
    assert _left(tmp_path) == []
