"""The engine configuration that decides a cell's figures, as the engine itself reports it.

Every cell stores its platform's labels; the `engine` label holds what the engine actually
ran with (not what virtbench meant to set): runsc's own configuration dump, `docker info`,
the LXC config as written, the QEMU command line and what QMP answers. Values are strings;
a setting the engine does not report is left out (never None), one this engine release does
not have at all is said (`ABSENT`): Debian's runsc has no directfs, which is a fact.

The parsers here are pure (unit-tested on captured outputs); the platforms read the engine.
"""

from __future__ import annotations

import re
from typing import Any

ABSENT = "not in this release"

# runsc's configuration in its debug log: the summary between its "*****" lines ("Key:
# value", several on a line joined by " / "; 2022 releases under a "Configuration:" line)
# and, in newer releases, every setting as "Config.Name (--flag): value"
RUNSC_KEYS = {
    "Platform": "platform",
    "FileAccess": "file_access",
    "FileAccessMounts": "file_access_mounts",
    "Directfs": "directfs",
    "DirectFS": "directfs",
    "Overlay": "overlay2",
    "Overlay2": "overlay2",
    "Network": "network",
}
_LOG_LINE = re.compile(r"^[IDWE]\d{4} [\d:.]+\s+\d+ \S+\] (.*)$")
_CONFIG_LINE = re.compile(r"^Config\.(\w+)(?: \(--[\w-]+\))?: (.*)$")


def runsc_config(debug_log: str) -> dict[str, str]:
    """runsc's effective configuration from the debug log one runsc start writes."""
    summary: dict[str, str] = {}
    full: dict[str, str] = {}
    markers = 0
    for line in debug_log.splitlines():
        m = _LOG_LINE.match(line)
        if m is None:
            continue
        text = m.group(1).strip()
        if text.startswith("*****"):
            markers += 1
        elif text.startswith("Version ") and "version" not in summary:
            summary["version"] = text[len("Version ") :].split(",")[0].strip()
        elif c := _CONFIG_LINE.match(text):
            if c.group(1) in RUNSC_KEYS:
                full[RUNSC_KEYS[c.group(1)]] = _runsc_value(c.group(1), c.group(2))
        elif markers == 1:  # inside the start banner
            for part in text.split(" / "):
                key, _, value = part.partition(": ")
                if key in RUNSC_KEYS and value:
                    summary.setdefault(RUNSC_KEYS[key], _runsc_value(key, value))
    out = summary | full
    if markers and "directfs" not in out:  # a release without the setting does not have it
        out["directfs"] = ABSENT
    return out


def _runsc_value(key: str, value: str) -> str:
    if key == "Network":  # "host, logging: false"
        return value.split(",")[0].strip()
    return value.strip()


def docker_config(info: dict[str, Any], userland_proxy: bool | None) -> dict[str, str]:
    """Docker's settings from `docker info --format '{{json .}}'`; userland-proxy is not in
    docker info: the daemon's own flag (dockerd.Daemon) says it."""
    out: dict[str, str] = {}
    for key, name in (
        ("ServerVersion", "version"),
        ("Driver", "storage_driver"),
        ("CgroupDriver", "cgroup_driver"),
        ("CgroupVersion", "cgroup_version"),
        ("DefaultRuntime", "default_runtime"),
    ):
        value = info.get(key)
        if value not in (None, ""):
            out[name] = str(value)
    for k, v in info.get("DriverStatus") or []:
        if k == "Backing Filesystem":
            out["backing_filesystem"] = str(v)
    if userland_proxy is not None:
        out["userland_proxy"] = "on" if userland_proxy else "off"
    return out


# keys naming this one container (paths, addresses, its name): they differ between any two
# instances and say nothing about how LXC runs the workload
LXC_PER_INSTANCE = (
    "lxc.uts.name",
    "lxc.rootfs.path",
    "lxc.mount.entry",
    "lxc.environment",
    "lxc.cgroup.dir",
    "lxc.net.0.veth.pair",
    "lxc.net.0.ipv4.address",
    "lxc.net.0.ipv4.gateway",
    "lxc.net.0.hwaddr",
    "lxc.init.cwd",
)


def lxc_config(text: str, version: str | None) -> dict[str, str]:
    """The keys of the LXC config as written (a key given twice: its values joined by ';')."""
    out: dict[str, str] = {"version": version} if version else {}
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        key, value = key.strip(), value.strip()
        if not sep or key.startswith("#") or key in LXC_PER_INSTANCE:
            continue
        out[key] = f"{out[key]};{value}" if key in out else value
    return out


def _option_value(option: str, key: str) -> str | None:
    """`key`'s value in a QEMU option string "a,key=value,b=c" (the first word is the type
    or a bare value)."""
    for part in option.split(","):
        k, sep, v = part.partition("=")
        if sep and k == key:
            return v
    return None


def qemu_config(
    cmdline: list[str], kvm: dict[str, Any] | None, machine_type: str | None
) -> dict[str, str]:
    """QEMU's configuration from its running command line (/proc/PID/cmdline) and QMP:
    `query-kvm` (is KVM enabled: otherwise TCG ran) and /machine's QOM type."""
    out: dict[str, str] = {}
    pairs = list(zip(cmdline, cmdline[1:], strict=False))
    for flag, value in pairs:
        if flag == "-machine":
            out["machine"] = value.split(",")[0]
            if accel := _option_value(value, "accel"):
                out["accel_asked"] = accel
        elif flag == "-accel":
            out["accel_asked"] = value.split(",")[0]
        elif flag == "-netdev":
            kind = value.split(",")[0]
            out["netdev"] = kind
            if kind == "tap":
                out["vhost"] = "on" if _option_value(value, "vhost") in ("on", "true") else "off"
        elif flag == "-drive" and (cache := _option_value(value, "cache")):
            out["drive_cache"] = cache
    if kvm is not None:
        out["accel"] = "kvm" if kvm.get("enabled") else "tcg"
    if machine_type:
        out["machine_type"] = machine_type.removesuffix("-machine")
    return out


def shown(config: dict[str, Any]) -> str:
    """One line for a report: key=value, unset values left out."""
    return ", ".join(f"{k}={v}" for k, v in sorted(config.items()) if v not in (None, ""))
