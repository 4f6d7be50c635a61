"""The QEMU command line for one guest, and host-side facts about a running QEMU process.

Machine q35 (HPET clock, PCI virtio); direct kernel boot of the uncompressed kernel (PVH);
QMP and the agent's virtio-serial channel on unix sockets in the VM's run directory; the
serial console goes to a log file that is only read to diagnose a failed boot.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path

from ...errors import PlatformError
from .initramfs import AGENT_PORT

NETS = ("virtio", "e1000", "none")
DISKS = ("virtio-blk", "sata", "ide")
DISK_CACHES = ("none", "writeback", "writethrough", "directsync", "unsafe")
# the cache modes in which QEMU opens the image with O_DIRECT: guest O_DIRECT reaches the device
HOST_DIRECT_CACHES = ("none", "directsync")
ACCELS = ("auto", "kvm", "tcg")

_NIC_DEVICE = {"virtio": "virtio-net-pci", "e1000": "e1000"}
# guest kernel modules each device needs (their dependencies are resolved on the host)
NET_MODULES = {"virtio": ("virtio_pci", "virtio_net"), "e1000": ("e1000",), "none": ()}
DISK_MODULES = {
    "virtio-blk": ("virtio_pci", "virtio_blk"),
    "sata": ("ahci", "sd_mod"),
    "ide": ("ata_piix", "sd_mod"),
}
ROOT_DEVICE = {"virtio-blk": "/dev/vda", "sata": "/dev/sda", "ide": "/dev/sda"}
BASE_MODULES = ("virtio_pci", "virtio_console", "crc32c_generic", "ext4", "overlay")


@dataclass
class VmConfig:
    name: str  # the instance name (vb-xxxxxx); QEMU's -name, so cleanup can find it
    run_dir: Path
    vmlinux: Path
    initrd: Path
    overlay: Path
    accel: str  # kvm | tcg (resolved, never auto)
    vcpus: int = 1
    memory_mb: int = 1024
    net: str = "virtio"
    disk: str = "virtio-blk"
    disk_cache: str = "none"
    tap: str | None = None  # None: user-mode networking
    guest_ip: str | None = None  # address/prefix
    gateway: str | None = None
    hostfwd: list[tuple[int, int]] = field(default_factory=list)  # (host port, guest port)
    modules: list[str] = field(default_factory=list)  # load order, passed to the initramfs

    @property
    def qmp_socket(self) -> Path:
        return self.run_dir / "qmp.sock"

    @property
    def agent_socket(self) -> Path:
        return self.run_dir / "qga.sock"

    @property
    def serial_log(self) -> Path:
        return self.run_dir / "serial.log"

    def mac(self) -> str:
        h = hashlib.sha256(self.name.encode()).digest()
        return "52:54:00:" + ":".join(f"{b:02x}" for b in h[:3])

    def cmdline(self) -> str:
        parts = [
            "console=ttyS0",
            "quiet",  # the serial port is slow under TCG; the log is for failures only
            "panic=-1",  # reboot at once on panic; -no-reboot turns that into a QEMU exit
            f"vb.root={ROOT_DEVICE[self.disk]}",
            f"vb.name={self.name}",
            "vb.modules=" + ",".join(self.modules),
        ]
        if self.net != "none":
            ip = self.guest_ip or "10.0.2.15/24"
            gw = self.gateway or "10.0.2.2"
            parts += [f"vb.ip={ip}", f"vb.gw={gw}"]
        return " ".join(parts)


def guest_modules(net: str, disk: str) -> tuple[str, ...]:
    """Driver modules this device choice needs in the guest (before dependency resolution)."""
    seen: dict[str, None] = {}
    for m in (*BASE_MODULES, *DISK_MODULES[disk], *NET_MODULES[net]):
        seen[m] = None
    return tuple(seen)


def argv(cfg: VmConfig, binary: str = "qemu-system-x86_64") -> list[str]:
    if cfg.accel not in ("kvm", "tcg"):
        raise PlatformError(f"internal: accelerator must be resolved, got {cfg.accel!r}")
    cpu = "host" if cfg.accel == "kvm" else "max"
    args = [
        binary,
        "-name", f"{cfg.name},debug-threads=on",  # names vCPU threads "CPU 0/TCG"
        "-machine", f"q35,accel={cfg.accel}",
        "-cpu", cpu,
        "-smp", str(cfg.vcpus),
        "-m", str(cfg.memory_mb),
        "-nodefaults", "-no-user-config", "-display", "none", "-no-reboot",
        "-kernel", str(cfg.vmlinux),
        "-initrd", str(cfg.initrd),
        "-append", cfg.cmdline(),
        "-serial", f"file:{cfg.serial_log}",
        "-qmp", f"unix:{cfg.qmp_socket},server=on,wait=off",
        "-chardev", f"socket,id=qga,path={cfg.agent_socket},server=on,wait=off",
        "-device", "virtio-serial-pci,id=vser0",
        "-device", f"virtserialport,bus=vser0.0,chardev=qga,name={AGENT_PORT}",
        "-drive",
        f"file={cfg.overlay},format=qcow2,if=none,id=root,cache={cfg.disk_cache},discard=unmap",
    ]  # fmt: skip
    if cfg.disk == "virtio-blk":
        args += ["-device", "virtio-blk-pci,drive=root"]
    elif cfg.disk == "sata":
        args += ["-device", "ide-hd,drive=root,bus=ide.0"]  # q35's built-in ICH9 AHCI
    else:
        args += ["-device", "piix3-ide,id=pata0", "-device", "ide-hd,drive=root,bus=pata0.0"]
    if cfg.net != "none":
        if cfg.tap:
            netdev = f"tap,id=net0,ifname={cfg.tap},script=no,downscript=no"
        else:
            fwd = "".join(f",hostfwd=tcp:127.0.0.1:{h}-:{g}" for h, g in cfg.hostfwd)
            netdev = f"user,id=net0,net=10.0.2.0/24{fwd}"
        args += [
            "-netdev",
            netdev,
            "-device",
            f"{_NIC_DEVICE[cfg.net]},netdev=net0,mac={cfg.mac()}",
        ]
    return args


def thread_names(pid: int) -> dict[int, str]:
    """tid -> thread name of a host process (vCPU threads are 'CPU n/TCG' or 'CPU n/KVM')."""
    out: dict[int, str] = {}
    task = Path(f"/proc/{pid}/task")
    try:
        for t in task.iterdir():
            try:
                out[int(t.name)] = (t / "comm").read_text().strip()
            except OSError:
                continue
    except OSError:
        pass
    return out


def qemu_name(pid: int) -> str | None:
    """The -name of a running QEMU (from its command line), or None if it is not QEMU."""
    try:
        return name_from_cmdline(Path(f"/proc/{pid}/cmdline").read_bytes())
    except OSError:
        return None


def name_from_cmdline(raw: bytes) -> str | None:
    args = raw.split(b"\0")
    if not args or b"qemu-system" not in args[0]:
        return None
    for i, a in enumerate(args[:-1]):
        if a == b"-name":
            return args[i + 1].decode(errors="replace").split(",", 1)[0]
    return None
