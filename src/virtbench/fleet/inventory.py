"""The user's own Ansible inventory (INI, YAML, a directory, anything Ansible reads): which
hosts a fleet run covers, checked with `ansible-inventory` before any host is touched."""

from __future__ import annotations

import ipaddress
import json
import os
import re
import subprocess
from pathlib import Path

from ..errors import VirtbenchError
from ..parsing import printable
from .ansible import ansible_env

_FAILED = re.compile(r"Failed to parse inventory with '(\w+)' plugin: (.*)")
_ORIGIN = re.compile(r"^Origin: (\S+)")


def parse_error(path: Path, stderr: str) -> str:
    """Ansible's reason, from the plugin that fits the file (it tries them all in turn)."""
    found: list[tuple[str, str, str]] = []  # plugin, reason, origin
    lines = stderr.splitlines()
    for i, line in enumerate(lines):
        m = _FAILED.search(line)
        if not m:
            continue
        origin = next(
            (o.group(1) for ln in lines[i + 1 :] if (o := _ORIGIN.match(ln.strip()))), str(path)
        )
        found.append((m.group(1), m.group(2).strip(), origin))
    wanted = "ini" if path.suffix not in (".yml", ".yaml") else "-"
    # a file position (path:line:col) says most; then the plugin made for the file's type
    rank = lambda f: (not f[2].startswith(str(path)), f[2] == str(path), f[0] != wanted)  # noqa: E731
    for plugin, reason, origin in sorted(found, key=rank):
        return f"inventory {origin} does not parse ({plugin}): {reason}"
    tail = " ".join(ln.strip() for ln in lines if "ERROR" in ln or "WARNING" in ln)
    return f"inventory {path} does not parse: {tail or stderr.strip()[-600:] or 'no hosts'}"


# a name SSH can reach: a DNS name (RFC 1123 labels) or an IPv4/IPv6 address
_HOSTNAME = re.compile(
    r"(?=.{1,253}$)[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*\.?"
)


def _reachable_name(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
        return True
    except ValueError:
        return _HOSTNAME.fullmatch(name) is not None


def _hosts(listing: dict, path: Path) -> list[str]:
    """The hosts of an `ansible-inventory --list`. Ansible's INI reader takes any file's
    lines for host names: a name that is neither a host name nor an address, and has no
    ansible_host to reach it by, says the file is not an inventory."""
    seen: dict[str, None] = {}
    for group, body in listing.items():
        if group != "_meta" and isinstance(body, dict):
            seen.update(dict.fromkeys(body.get("hosts", [])))
    hostvars = listing.get("_meta", {}).get("hostvars", {})
    for name in seen:
        if not _reachable_name(str(name)) and "ansible_host" not in hostvars.get(name, {}):
            raise VirtbenchError(
                f"{path} is not an Ansible inventory (or names a host it cannot reach): host"
                f" {printable(repr(name)[:80])} is neither a host name nor an address and has"
                " no ansible_host; allowed: an INI or YAML inventory, a directory of them"
            )
    return list(seen)


OFFLINE_VAR = "virtbench_offline"  # the host installs from the shipped wheelhouse


def offline_hosts(listing: dict, hosts: list[str]) -> list[str]:
    """Which of `hosts` an `ansible-inventory --list` marks offline (group vars are merged
    into _meta.hostvars there; INI gives strings, YAML booleans). Pure: unit-tested."""
    hostvars = listing.get("_meta", {}).get("hostvars", {})
    out = []
    for h in hosts:
        value = hostvars.get(h, {}).get(OFFLINE_VAR, False)
        if value is True or str(value).strip().lower() in ("true", "yes", "on", "1"):
            out.append(h)
    return out


def offline(path: Path, hosts: list[str]) -> list[str]:
    """The hosts of inventory `path` marked `virtbench_offline` (one ansible-inventory)."""
    argv = ["ansible-inventory", "-i", str(path), "--list"]
    r = subprocess.run(argv, capture_output=True, text=True, env={**os.environ, **ansible_env()})
    if r.returncode != 0:
        raise VirtbenchError(parse_error(path, r.stderr))
    return offline_hosts(json.loads(r.stdout), hosts)


def _list(path: Path, limit: str | None) -> list[str]:
    argv = ["ansible-inventory", "-i", str(path), "--list"]
    if limit:
        argv += ["--limit", limit]
    env = {**os.environ, **ansible_env()}
    r = subprocess.run(argv, capture_output=True, text=True, env=env)
    if r.returncode != 0:
        raise VirtbenchError(parse_error(path, r.stderr))
    return _hosts(json.loads(r.stdout), path)


def hosts(path: Path, limit: str | None = None) -> list[str]:
    """The hosts of inventory `path` that `limit` (an Ansible pattern) selects, in order."""
    if not path.exists():
        raise VirtbenchError(f"inventory {path} does not exist")
    if not (path.is_file() or path.is_dir()):  # a FIFO would hang Ansible, a device too
        raise VirtbenchError(f"inventory {path} is not a regular file or a directory")
    every = _list(path, None)
    if not every:
        raise VirtbenchError(f"inventory {path} has no hosts")
    if not limit:
        return every
    chosen = _list(path, limit)
    if not chosen:
        raise VirtbenchError(
            f"--limit {limit!r} matches no host of inventory {path}; it has: {', '.join(every)}"
        )
    return chosen
