"""Load generators on another host (serving/remote.py): the client host comes from the
user's Ansible inventory; bad names, inventories and campaigns are named."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from virtbench.campaign import loader
from virtbench.errors import CampaignError, VirtbenchError
from virtbench.serving import netpath, remote

INV = """[clients]
load1 ansible_host=10.9.8.7 ansible_port=2222 ansible_user=bench
load2

[clients:vars]
ansible_ssh_private_key_file=/keys/id
ansible_ssh_common_args='-o StrictHostKeyChecking=no -o ServerAliveInterval=2'
"""


def test_client_host_from_the_inventory(tmp_path):
    inv = tmp_path / "inv.ini"
    inv.write_text(INV)
    t = remote.resolve(inv, "load1", "c.toml")
    assert (t.address, t.port, t.user, t.key) == ("10.9.8.7", 2222, "bench", "/keys/id")
    argv = t.argv("true")
    assert argv[-2:] == ["10.9.8.7", "true"] and "-p" in argv and "2222" in argv
    assert "StrictHostKeyChecking=no" in argv and f"ControlPath={remote.control_path()}" in argv
    assert remote.resolve(inv, "load2", "c.toml").address == "load2"  # no ansible_host


def test_host_not_in_inventory_and_bad_inventory_are_named(tmp_path):
    inv = tmp_path / "inv.ini"
    inv.write_text(INV)
    with pytest.raises(VirtbenchError, match=r"c.toml: .*'ghost' is not in inventory .*load1"):
        remote.resolve(inv, "ghost", "c.toml: campaign.client_host")
    bad = tmp_path / "bad.ini"
    bad.write_text("[clients\nload1\n")
    with pytest.raises(VirtbenchError, match="does not parse"):
        remote.resolve(bad, "load1", "c.toml")
    with pytest.raises(VirtbenchError, match="does not exist"):
        remote.resolve(tmp_path / "none.ini", "load1", "c.toml")


def test_campaign_names_a_client_host(tmp_path, monkeypatch):
    text = '[campaign]\nname = "r"\nclient_host = "load1"\n[suites.network]\n'
    c = loader.parse(text + 'test_cases = ["iperf3-tcp"]\n', "r.toml")
    assert c.settings.client_host == "load1" and c.settings.client_inventory is None
    monkeypatch.delenv(remote.INVENTORY_ENV, raising=False)
    with pytest.raises(VirtbenchError, match="client_host = 'load1' needs an inventory"):
        remote.open_client(c.settings, "r.toml")
    with pytest.raises(CampaignError, match="client_host"):
        loader.parse('[campaign]\nname = "r"\nclient_host = ""\n', "r.toml")
    # relative inventories are the campaign file's neighbours
    (tmp_path / "inv.ini").write_text(INV)
    c.settings.client_inventory = "inv.ini"
    with pytest.raises(VirtbenchError, match="'load9' is not in inventory"):
        c.settings.client_host = "load9"
        remote.open_client(c.settings, str(tmp_path / "r.toml"))


def test_unreachable_client_host_is_named(tmp_path):
    inv = tmp_path / "inv.ini"
    inv.write_text("ghost ansible_host=127.0.0.1 ansible_port=1 ansible_user=root\n")
    client = remote.RemoteClient(remote.resolve(inv, "ghost", "c.toml"), "127.0.0.1")
    with pytest.raises(VirtbenchError, match=r"client host ghost \(127.0.0.1\) is unreachable"):
        client.check()


def test_local_files_in_argv_travel_with_the_request(tmp_path):
    script = tmp_path / "calls.lua"  # pytest's tmp_path is under the temporary directory
    script.write_text("-- wrk")
    client = remote.RemoteClient(remote.SshTarget("c", "10.0.0.2"), "10.0.0.1")
    req = client.request(["wrk", "-s", str(script), "http://x/"], [1], 5.0, {"A": "1"})
    assert req["files"] == {"2": ["2-calls.lua", "LS0gd3Jr"]} and req["target"] == "10.0.0.1"
    assert req["argv"][0] == "wrk" and req["env"] == {"A": "1"}


def test_wrapper_runs_a_tool_and_measures_it(tmp_path):
    """The wrapper itself, on this host (python3, no SSH): pinned, reaped, timed."""
    script = tmp_path / "s.sh"
    script.write_text("echo hi; echo err >&2; exit 3\n")
    client = remote.RemoteClient(remote.SshTarget("c", "x"), "127.0.0.1")
    req = client.request(["sh", str(script)], [0], 10.0, {})
    r = subprocess.run(["python3", "-c", remote.WRAPPER], input=json.dumps(req),
                       capture_output=True, text=True)  # fmt: skip
    out = json.loads(r.stdout)
    assert out["rc"] == 3 and out["stdout"] == "hi\n" and out["stderr"] == "err\n"
    assert out["cpus"] == [0] and out["elapsed"] > 0 and out["rtt_s"] is not None
    assert not any(Path("/tmp").glob(f"vb-client-*/{1}-s.sh"))  # its directory is removed


class _Plat:
    def __init__(self, addr):
        self.addr = addr

    def listen_address(self):
        return self.addr


class _Ctx:
    remote = object()


def test_servers_on_loopback_listen_everywhere_for_a_client_host():
    assert netpath.listen_address(_Plat("127.0.0.1"), _Ctx()) is None
    assert netpath.listen_address(_Plat("10.213.0.5"), _Ctx()) == "10.213.0.5"
    _Ctx.remote = None
    assert netpath.listen_address(_Plat("127.0.0.1"), _Ctx()) == "127.0.0.1"


class _LocalShell(remote.SshTarget):
    """What ssh does with the remote words: one string for the remote user's shell."""

    def argv(self, *words: str) -> list[str]:
        return ["sh", "-c", " ".join(words)] if words else ["true"]


def test_commands_survive_the_remote_shell(tmp_path):
    client = remote.RemoteClient(_LocalShell("local", "127.0.0.1"), "127.0.0.1")
    client.check()
    offset, err = client.clock()
    assert abs(offset) <= err + 0.005 and err < 0.5  # one clock
    script = tmp_path / "it's.sh"  # a quote in a shipped file's name
    script.write_text('echo "$0" ok; echo $VB_X\n')
    res, out = client.run(["sh", str(script)], [0], 10.0, {"VB_X": "a b"})
    assert res.ok and res.stdout.endswith("ok\na b\n") and out["cpus"] == [0]
    cell = remote.CellClient(client)
    cell.run(["true"], None, 5.0)
    assert cell.facts["host"] == "local" and cell.facts["rtt_ms"] >= 0
    assert abs(cell.facts["clock_offset_ms"]) <= cell.facts["clock_offset_err_ms"] + 5
    bad = remote.RemoteClient(_LocalShell("local", "x", python="/nonexistent/python3"), "x")
    with pytest.raises(VirtbenchError, match="does not run there"):
        bad.check()
