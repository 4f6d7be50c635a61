"""Simulated fleet hosts on this machine: each host is a network namespace running a real
OpenSSH server, on a private bridge; Ansible reaches them over SSH with a throwaway key.

The namespaces share this machine's filesystem, so every host gets its own remote directory
(`/tmp/vb-fleet-<host>`) and uses the virtbench venv already installed here.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

BRIDGE = "vb-flt-br"
SUBNET = "10.217.14"  # private, beside virtbench's own 10.213.0.0/24
SSHD = "/usr/sbin/sshd"


@dataclass
class Host:
    name: str
    address: str
    netns: str
    veth: str
    home: Path  # sshd config, host key, pid file
    sshd: subprocess.Popen | None = None


def _ip(*args: str, netns: str | None = None, check: bool = True) -> None:
    argv = ["ip", "netns", "exec", netns, "ip", *args] if netns else ["ip", *args]
    subprocess.run(argv, check=check, capture_output=True)


def _wait_port(address: str, port: int = 22, timeout: float = 10) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError), socket.create_connection((address, port), 0.5):
            return
        time.sleep(0.1)
    raise RuntimeError(f"sshd on {address}:{port} did not answer in {timeout}s")


class Fleet:
    def __init__(self, root: Path, names: list[str]) -> None:
        self.root = root
        self.key = root / "id_ed25519"
        self.hosts = [
            Host(n, f"{SUBNET}.{10 + i}", f"vb-flt-{n}", f"vb-flt-{n}", root / n)
            for i, n in enumerate(names)
        ]

    def up(self) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(self.key)], check=True
        )
        _ip("link", "add", BRIDGE, "type", "bridge")
        _ip("addr", "add", f"{SUBNET}.1/24", "dev", BRIDGE)
        _ip("link", "set", BRIDGE, "up")
        Path("/run/sshd").mkdir(exist_ok=True)  # sshd's privilege separation directory
        for h in self.hosts:
            h.home.mkdir()
            subprocess.run(["ip", "netns", "add", h.netns], check=True)
            _ip("link", "add", h.veth, "type", "veth", "peer", "name", "eth0", "netns", h.netns)
            _ip("link", "set", h.veth, "master", BRIDGE)
            _ip("link", "set", h.veth, "up")
            _ip("addr", "add", f"{h.address}/24", "dev", "eth0", netns=h.netns)
            _ip("link", "set", "eth0", "up", netns=h.netns)
            _ip("link", "set", "lo", "up", netns=h.netns)
            subprocess.run(
                ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(h.home / "host_key")],
                check=True,
            )
            shutil.copy(f"{self.key}.pub", h.home / "authorized_keys")
            (h.home / "sshd_config").write_text(
                f"ListenAddress {h.address}\nHostKey {h.home / 'host_key'}\n"
                f"PidFile {h.home / 'sshd.pid'}\nAuthorizedKeysFile {h.home / 'authorized_keys'}\n"
                "UsePAM no\nStrictModes no\nPermitRootLogin prohibit-password\n"
                "PasswordAuthentication no\nMaxStartups 100\nMaxSessions 100\n"
                "Subsystem sftp /usr/lib/openssh/sftp-server\n"
            )
            self.start_sshd(h)

    def start_sshd(self, h: Host) -> None:
        h.sshd = subprocess.Popen(
            ["ip", "netns", "exec", h.netns, SSHD, "-D", "-e", "-f", str(h.home / "sshd_config")],
            stdout=subprocess.DEVNULL,
            stderr=open(h.home / "sshd.log", "a"),  # noqa: SIM115 - owned by the child
        )
        _wait_port(h.address)

    def lose(self, h: Host) -> None:
        """The host drops off the network: every process in it dies, its link goes down."""
        _ip("link", "set", h.veth, "down")
        self.kill_all(h)

    def restore(self, h: Host) -> None:
        _ip("link", "set", h.veth, "up")
        self.start_sshd(h)

    def kill_all(self, h: Host) -> None:
        pids = subprocess.run(["ip", "netns", "pids", h.netns], capture_output=True, text=True)
        for pid in pids.stdout.split():
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(pid), signal.SIGKILL)
        if h.sshd is not None:
            h.sshd.wait(5)

    def down(self) -> None:
        for h in self.hosts:
            self.kill_all(h)
            subprocess.run(["ip", "netns", "del", h.netns], capture_output=True)
            _ip("link", "del", h.veth, check=False)
            shutil.rmtree(f"/tmp/vb-fleet-{h.name}", ignore_errors=True)
        _ip("link", "del", BRIDGE, check=False)

    def inventory(self, path: Path, extra: str = "") -> Path:
        """A standard INI inventory of the hosts, as an SRE keeps one."""
        lines = ["[bench]"]
        for h in self.hosts:
            lines.append(
                f"{h.name} ansible_host={h.address} virtbench_remote_dir=/tmp/vb-fleet-{h.name}"
            )
        lines += [
            "",
            "[bench:vars]",
            "ansible_user=root",
            f"ansible_ssh_private_key_file={self.key}",
            # a lost host's multiplexed connection is noticed within seconds
            "ansible_ssh_common_args='-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null"
            " -o ServerAliveInterval=2 -o ServerAliveCountMax=2'",
            "ansible_pipelining=true",
            "ansible_python_interpreter=/usr/bin/python3",
            "ansible_ssh_timeout=3",
            "virtbench_install=missing",
            "virtbench_run_args=--allow-concurrent",
            extra,
        ]
        path.write_text("\n".join(lines) + "\n")
        return path


@contextlib.contextmanager
def fleet(root: Path, names: list[str]) -> Iterator[Fleet]:
    f = Fleet(root, names)
    try:
        f.up()
        yield f
    finally:
        f.down()
