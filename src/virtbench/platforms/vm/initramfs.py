"""The guest's initramfs: busybox, the driver modules and a two-stage init.

Stage 1 (in the initramfs) loads drivers, mounts the root disk named on the kernel command
line and switches to it with busybox `init` as PID 1. Stage 2 (busybox sysinit) brings up the
network and hands the agent's virtio-serial port to qemu-guest-agent, which busybox init keeps
running; the host then controls the guest only through that agent. A second, tiny initramfs
serves the KVM probe: its init just writes to QEMU's isa-debug-exit port.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from ...errors import VirtbenchError
from . import modules, paths
from .cpio import CpioWriter

BUSYBOX = Path("/bin/busybox")
AGENT_PORT = "org.qemu.guest_agent.0"
PROBE_EXIT_CODE = 33  # QEMU exits (0x10 << 1) | 1 when the probe init writes 0x10 to 0xf4

STAGE1 = r"""#!/bin/busybox sh
# virtbench guest init, stage 1: drivers, root disk, switch_root to busybox init.
/bin/busybox --install -s /bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
fail() { echo "vb-init: $*" >/dev/console; sleep 2; poweroff -f; }
arg() { for x in $(cat /proc/cmdline); do case "$x" in "$1="*) echo "${x#*=}";; esac; done; }
# the host names the drivers this VM needs, dependencies first (vb.modules=a,b,c)
for m in $(arg vb.modules | tr , " "); do
  insmod "/modules/$m.ko" || echo "vb-init: insmod $m failed"
done
root=$(arg vb.root)
i=0
while [ ! -b "$root" ]; do
  i=$((i + 1)); [ $i -gt 300 ] && fail "root device '$root' did not appear"
  sleep 0.1
done
mount -t ext4 -o rw,noatime "$root" /newroot || fail "cannot mount $root"
mount -t tmpfs -o mode=0755 tmpfs /newroot/run || fail "cannot mount /run"
mkdir -p /newroot/run/vb/modules
cp /bin/busybox /stage2 /newroot/run/vb/
# modules not loaded now stay available for on-demand insmod (container@vm networking)
for f in /modules/*.ko; do
  m=${f##*/}; [ -d "/sys/module/${m%.ko}" ] || cp "$f" /newroot/run/vb/modules/
done
cp /inittab /newroot/etc/inittab  # the root is this VM's private overlay, never the base
mount --move /dev /newroot/dev
mount --move /proc /newroot/proc
mount --move /sys /newroot/sys
exec switch_root /newroot /run/vb/busybox init
"""

STAGE2 = r"""# virtbench guest init, stage 2 (busybox sysinit, in the root filesystem).
B=/run/vb/busybox
arg() { for x in $($B cat /proc/cmdline); do case "$x" in "$1="*) echo "${x#*=}";; esac; done; }
$B mkdir -p /dev/pts /dev/shm
$B mount -t devpts devpts /dev/pts
$B mount -t tmpfs tmpfs /dev/shm
$B mount -t cgroup2 cgroup2 /sys/fs/cgroup  # for OCI runtimes in the guest (container@vm)
$B hostname "$(arg vb.name)"
# the image has no /etc/hosts: without one every lookup of the hostname goes to a DNS server
# the guest may not reach (10 s each), which stalls Open MPI (hpcc) without using CPU
$B printf '127.0.0.1\tlocalhost\n::1\tlocalhost\n127.0.1.1\t%%s\n' "$(arg vb.name)" > /etc/hosts
$B ip link set lo up
ip=$(arg vb.ip)
if [ -n "$ip" ]; then
  $B ip addr add "$ip" dev eth0
  $B ip link set eth0 up
  gw=$(arg vb.gw)
  [ -n "$gw" ] && $B ip route add default via "$gw"
fi
for d in /sys/class/virtio-ports/*; do
  [ "$($B cat "$d/name" 2>/dev/null)" = "%(port)s" ] && $B ln -sf "/dev/${d##*/}" /run/vb/qga
done
"""

INITTAB = """::sysinit:/run/vb/busybox sh /run/vb/stage2
::respawn:/usr/sbin/qemu-ga --method=virtio-serial --path=/run/vb/qga --statedir=/run/vb
::shutdown:/run/vb/busybox sh -c 'sync; mount -o remount,ro /'
"""

PROBE_INIT = r"""#!/bin/busybox sh
# KVM probe: reaching this line proves the guest kernel booted to init under this accelerator.
/bin/busybox mount -t devtmpfs devtmpfs /dev
/bin/busybox printf '\020' | /bin/busybox dd of=/dev/port bs=1 seek=244 count=1 2>/dev/null
/bin/busybox poweroff -f
"""


def _busybox() -> bytes:
    if not BUSYBOX.exists():
        raise VirtbenchError(
            f"{BUSYBOX} missing: the guest init needs a static busybox; "
            "apt-get install busybox-static   (or run: virtbench setup)"
        )
    data = BUSYBOX.read_bytes()
    if b"ld-linux" in data[:65536]:  # a dynamic busybox cannot run without the guest's libc
        raise VirtbenchError(
            f"{BUSYBOX} is dynamically linked; the guest init needs the static one: "
            "apt-get install busybox-static"
        )
    return data


def _base(init: str) -> CpioWriter:
    w = CpioWriter()
    for d in ("bin", "dev", "proc", "sys", "newroot", "modules"):
        w.dir(d)
    w.chardev("dev/console", 5, 1)  # the kernel opens it before devtmpfs exists
    w.file("bin/busybox", _busybox(), 0o755)
    w.file("init", init.encode(), 0o755)
    return w


def guest_initramfs(modules_dir: Path) -> bytes:
    w = _base(STAGE1)
    for name, data in modules.module_files(modules_dir):
        w.file(f"modules/{name}.ko", data)
    w.file("stage2", (STAGE2 % {"port": AGENT_PORT}).encode(), 0o755)
    w.file("inittab", INITTAB.encode())
    return w.bytes()


def probe_initramfs() -> bytes:
    return _base(PROBE_INIT).bytes()


def script_digest() -> str:
    """Changes whenever the init scripts change, so cached initramfs files are rebuilt."""
    text = STAGE1 + STAGE2 + INITTAB + PROBE_INIT + repr(modules.GUEST_MODULES)
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def write_cached(path: Path, build, stale: str | None = None) -> Path:
    """Write build() to path atomically unless it already exists; then remove older builds
    matching the glob `stale` (earlier init recipes) so the cache does not grow."""
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + f".tmp{os.getpid()}")
        tmp.write_bytes(build())
        tmp.rename(path)
    for old in path.parent.glob(stale) if stale else ():
        if old != path and ".tmp" not in old.name and paths.stale(old):
            old.unlink(missing_ok=True)
    return path
