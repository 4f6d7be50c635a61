"""The `vm` platform: a QEMU guest booted from the shared root filesystem, controlled only
through qemu-guest-agent; resources through cgroups and vCPU thread pinning."""

from __future__ import annotations

import contextlib
import secrets
import shutil
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

from ... import cleanup, directio, labelkeys, tools
from ...cgroups import Cgroup
from ...errors import PlatformError
from ...naming import NAME_PREFIX
from ...procfs import other_threads
from .. import engine_config
from ..base import Accounting, ExecResult, Platform, Process
from ..capabilities import BootPhases, ThreadGroup
from ..cpu_weight import weighted
from ..registry import register
from . import accel, image, modules, nicstall, options, paths, qemu
from .agent import AgentError
from .guest import GuestProcess
from .guest import run as guest_run
from .jsonsock import ChannelError
from .machine import Machine
from .network import GuestNet
from .qmp import QmpError

GUEST_WORKROOT = "/var/tmp"


@register
class VmPlatform(Platform):
    kind = "vm"
    description = (
        "a QEMU guest (KVM, or TCG binary translation) on the Debian kernel, root filesystem "
        "from the shared image, controlled through qemu-guest-agent"
    )
    Options = options.VmOptions
    opts: options.VmOptions

    @classmethod
    def runtime_tools(cls, options: dict[str, Any]) -> frozenset[str]:
        """capabilities.RuntimeTools: QEMU (the one whose version moves its figures)."""
        return frozenset({"qemu-system-x86_64"})

    def __init__(self, spec, instance, host=None, budget=None) -> None:
        super().__init__(spec, instance, host, budget=budget)
        self.machine: Machine | None = None
        self.net: GuestNet | None = None
        self.cgroup: Cgroup | None = None
        self.accel_used: str | None = None
        self.accel_reason = ""
        self.facts: dict[str, Any] = {}
        self._procs: list[GuestProcess] = []
        self._pinned: list[int] | None = None
        self._modules_dir: Path | None = None  # the guest kernel's, for on-demand modules
        # what platforms inside asked to be done in the guest before it stops (guestdocker:
        # remove containers, stop dockerd), by name so each is registered once
        self._teardown_hooks: dict[str, Callable[[], None]] = {}

    # --- lifecycle ----------------------------------------------------------------------
    def provision(self) -> None:
        if self.host is not None:
            raise PlatformError(
                f"platform '{self.name}': a vm cannot run inside another platform "
                f"('{self.host.name}'); nested virtualization is not supported"
            )
        o = self.opts
        tools.require(["qemu-system-x86_64", "qemu-img"], needed_by="the vm platform")
        cleanup.claim(self.instance)  # `virtbench cleanup` spares us while we run
        self.accel_used, self.accel_reason = accel.resolve(o.accel)
        # first use builds the shared tree (minutes, with progress) and the ext4 image (seconds)
        files = image.boot_files(o.disk_gb, log=lambda m: print(m, flush=True))
        self._modules_dir = files.kernel.modules
        run_dir = paths.run_dir() / self.instance
        run_dir.mkdir(parents=True, exist_ok=True)
        overlay = run_dir / "root.qcow2"
        image.create_overlay(files.root, overlay)
        self.net = GuestNet.setup(self.instance, o.network)
        wanted = qemu.guest_modules(o.net, o.disk)
        cfg = qemu.VmConfig(
            name=self.instance,
            run_dir=run_dir,
            vmlinux=files.vmlinux,
            initrd=files.initrd,
            overlay=overlay,
            accel=self.accel_used,
            vcpus=o.vcpus,
            memory_mb=o.memory_mb,
            net=o.net,
            disk=o.disk,
            disk_cache=o.disk_cache,
            tap=self.net.tap,
            guest_ip=self.net.cidr,
            gateway=self.net.gateway,
            modules=modules.resolve(files.kernel.modules, wanted),
        )
        self.cgroup = self._make_cgroup()
        self.machine = Machine(cfg)
        self.machine.start(o.boot_timeout, on_pid=self._enter_cgroup)
        self._pinned = o.vcpu_pin
        self.machine.pin_vcpus(self._pinned)
        self.machine.pin_emulator(o.emulator_pin)
        self.facts = {
            "accel_used": self.accel_used,
            "accel_reason": self.accel_reason,
            "network_used": self.net.mode,
            "guest_kernel": files.kernel.version,
            "rootfs_key": files.rootfs_key,
            "qemu_version": tools.version("qemu-system-x86_64"),
            "boot_s": round(self.machine.timings["boot_s"], 3),
            # the cache mode in effect, default included: whether guest O_DIRECT reaches a disk
            "disk_cache": o.disk_cache,
        }
        if self.net.fallback_reason:
            self.facts["network_fallback"] = self.net.fallback_reason
        if engine := self._engine_config():
            self.facts[labelkeys.ENGINE] = engine
        self._guest(["mkdir", "-p", self.workdir], "creating the guest work directory")
        if self.net.mode in ("bridge", "nat"):
            # the first TCP connect after boot can fail until ARP settles: resolve it now
            self.exec(["/run/vb/busybox", "ping", "-c", "1", "-W", "2", str(self.net.gateway)])

    def load_modules(self, names: tuple[str, ...]) -> None:
        """insmod guest kernel modules the initramfs carried but did not load at boot (the
        stage-1 init keeps them in /run/vb/modules), dependencies first."""
        if self._modules_dir is None:
            raise PlatformError(f"platform '{self.name}' is not provisioned")
        order = modules.resolve(self._modules_dir, names)
        script = (
            'for m in "$@"; do [ -d "/sys/module/$m" ] && continue; '
            '/run/vb/busybox insmod "/run/vb/modules/$m.ko" || { echo "insmod $m failed" >&2; '
            "exit 1; }; done"
        )
        r = self.exec(["sh", "-c", script, "sh", *order], timeout=60)
        if not r.ok:
            raise PlatformError(
                f"platform '{self.name}': loading guest kernel modules {', '.join(names)} "
                f"failed: {(r.stderr or r.stdout).strip()[-400:]}"
            )

    def on_teardown(self, name: str, hook: Callable[[], None]) -> None:
        """Run `hook` in teardown while the guest still runs (once per name; its failures are
        ignored: the guest and its disk go away right after)."""
        self._teardown_hooks.setdefault(name, hook)

    def _make_cgroup(self) -> Cgroup | None:
        """The QEMU process's group, with the VM's CPU options; inside a shared CPU budget
        (`self.budget`, cgroups/budget.py) it is made in the budget's group and has no quota
        of its own: the budget is its quota."""
        o = self.opts
        budget = self.budget
        limits = {
            "cpu_weight": o.cpu_weight,
            "cpu_quota_us": o.cpu_quota_us if budget is None else None,
            "cpu_period_us": o.cpu_period_us if budget is None else None,
        }
        try:
            name = self.instance if budget is None else budget.child(self.instance)
            return Cgroup.create(name, **limits)
        except (PlatformError, OSError) as exc:
            if budget is not None or any(v is not None for v in limits.values()):
                raise PlatformError(
                    f"platform '{self.name}': cannot apply CPU limits {limits}: {exc}"
                ) from exc
            return None  # accounting falls back to the QEMU process's own CPU time

    def _enter_cgroup(self, pid: int) -> None:
        if self.cgroup is not None:
            self.cgroup.add_pid(pid)  # moves all QEMU threads, vCPUs included

    def shutdown(self, timeout: float = 30.0) -> float:
        """Graceful guest poweroff; returns the seconds until QEMU exited (lifecycle suite)."""
        if self.machine is None:
            raise PlatformError(f"platform '{self.name}' is not provisioned")
        return self.machine.shutdown(timeout)

    def teardown(self) -> None:
        for p in self._procs:
            with contextlib.suppress(Exception):
                p.stop(timeout=2)
        self._procs.clear()
        hooks, self._teardown_hooks = list(self._teardown_hooks.values()), {}
        for hook in hooks:
            if self.machine is not None and self.machine.alive():
                with contextlib.suppress(Exception):
                    hook()
        if self.machine is not None:
            self.machine.stop()
        if self.cgroup is not None:
            with contextlib.suppress(PlatformError):
                self.cgroup.destroy()
            self.cgroup = None
        if self.net is not None:
            self.net.teardown()
            self.net = None
        shutil.rmtree(paths.run_dir() / self.instance, ignore_errors=True)
        cleanup.release(self.instance)

    # --- running things inside ----------------------------------------------------------
    def _agent(self):
        if self.machine is None or not self.machine.alive():
            raise PlatformError(f"platform '{self.name}': the guest is not running")
        return self.machine.agent

    def _guest(self, argv: list[str], what: str) -> ExecResult:
        r = self.exec(argv, timeout=60)
        if not r.ok:
            raise PlatformError(f"{self.name}: {what} failed: {(r.stderr or r.stdout).strip()}")
        return r

    def _place(self, cpus: list[int] | None) -> None:
        """Pin vCPU threads to the cell's host CPUs, else to vcpu_pin, else let them float."""
        target = cpus or self.opts.vcpu_pin
        if self.machine is not None and target != self._pinned:
            self.machine.pin_vcpus(target)
            self._pinned = target

    def _channel_error(self, argv: list[str], exc: Exception) -> PlatformError:
        state = "running" if self.machine is not None and self.machine.alive() else "gone"
        kept = self.machine.keep_serial_log() if self.machine is not None else None
        return PlatformError(
            f"platform '{self.name}': guest agent failed running {argv[0]!r}: {exc} "
            f"(QEMU {state}; serial log kept at {kept})"
        )

    def exec(self, argv, *, cpus=None, timeout=None, env=None) -> ExecResult:
        agent = self._agent()
        self._place(cpus)
        try:
            return guest_run(agent, list(argv), timeout, env)
        except (AgentError, ChannelError) as exc:
            raise self._channel_error(argv, exc) from exc

    def spawn(self, argv, *, cpus=None, env=None) -> Process:
        agent = self._agent()
        self._place(cpus)
        try:
            proc = GuestProcess(agent, list(argv), env)
        except (AgentError, ChannelError) as exc:
            raise self._channel_error(argv, exc) from exc
        self._procs.append(proc)
        return proc

    def endpoint(self, port: int) -> tuple[str, int]:
        if self.net is None or self.machine is None:
            raise PlatformError(f"platform '{self.name}' is not provisioned")
        if self.opts.net == "none":
            raise PlatformError(f"platform '{self.name}' has net = \"none\": no endpoint")
        return self.net.endpoint(port, self.machine.qmp)

    def recover_network(self) -> tuple[str, bool]:
        """The guest's transmit watchdog, virtio-net's rings and the guest's counters; a
        transmit ring with buffers QEMU was never told about gets a kick (vm/nicstall.py)."""
        m = self.machine
        if m is None or not m.alive() or self.opts.net == "none":
            return "", False
        facts = nicstall.describe(m.cfg.serial_log, m.qmp, m.agent)
        ring = nicstall.stalled_tx(m.qmp) if m.qmp is not None else None
        if ring is None:
            return facts, False  # not the known stall: nothing to do
        done, what = self._kick(ring)
        if not done:
            return f"{facts} | kick of the transmit ring failed: {what}", False
        return f"{facts} | {ring.waiting} buffers were waiting: {what}", True

    def network_stall(self) -> str | None:
        """A transmit ring that stalled during a measurement (the server answered the
        readiness probe, then went silent for the rest of the run): kicked. Healthy and idle,
        the ring has no waiting buffer, and the check is a few QMP reads."""
        m = self.machine
        if m is None or m.qmp is None or not m.alive() or self.opts.net == "none":
            return None
        ring = nicstall.stalled_tx(m.qmp)
        if ring is None:
            return None
        done, what = self._kick(ring)
        return f"guest NIC stalled ({ring.text()}); " + (
            f"kicked: {what}" if done else f"kick failed: {what}"
        )

    def _kick(self, ring: nicstall.Ring) -> tuple[bool, str]:
        done, what = nicstall.kick_tx(self.machine.agent) if self.machine else (False, "")
        if done:
            # every later cell of this target says so (labels.platform.guest_nic_kicks)
            self.facts["guest_nic_kicks"] = self.facts.get("guest_nic_kicks", 0) + 1
            self.facts["guest_nic_stall"] = ring.text()  # the last one, as QEMU saw it
        return done, what

    def listen_address(self) -> str | None:
        # the guest's address in every mode: the bridge, nat's DNAT and user mode's forward
        # all lead there
        return self.net.guest_ip if self.net is not None else None

    @property
    def workdir(self) -> str:
        return f"{GUEST_WORKROOT}/{self.instance}"

    def accounting(self) -> Accounting:
        m = self.machine
        threads = m.threads() if m is not None else {}
        io = sorted(t for t, n in threads.items() if n.startswith(("IO ", "iothread", "worker")))
        return Accounting(
            pids=[m.pid] if m is not None and m.pid and m.alive() else [],
            threads=list(m.vcpu_threads) if m is not None else [],
            cgroups=self.cgroup.paths() if self.cgroup is not None else {},
            net_ifaces=[self.net.tap] if self.net is not None and self.net.tap else [],
            extra={
                "qemu_pid": m.pid if m is not None else None,
                "vcpu_threads": list(m.vcpu_threads) if m is not None else [],
                "io_threads": io,
                "tap": self.net.tap if self.net is not None else None,
                "accel": self.accel_used,
            },
        )

    def labels(self) -> dict[str, Any]:
        return {**super().labels(), **self.facts}

    def _engine_config(self) -> dict[str, str]:
        """QEMU as it runs: its command line (/proc) and, over QMP, whether KVM is on and
        the machine type the `q35` alias resolved to."""
        m = self.machine
        if m is None or not m.pid:
            return {}
        try:
            raw = Path(f"/proc/{m.pid}/cmdline").read_bytes()
        except OSError:
            return {}
        cmdline = [a.decode(errors="replace") for a in raw.split(b"\0") if a]
        kvm, mtype = None, None
        if m.qmp is not None:
            with contextlib.suppress(QmpError, ChannelError):
                kvm = m.qmp.command("query-kvm")
            with contextlib.suppress(QmpError, ChannelError):
                mtype = m.qmp.command("qom-get", path="/machine", property="type")
        return engine_config.qemu_config(cmdline, kvm, mtype if isinstance(mtype, str) else None)

    @classmethod
    def host_data_dir(cls, spec) -> str | None:
        return str(paths.run_dir())  # each VM's root.qcow2 overlay lives there

    def direct_io(self) -> str:
        cache = self.opts.disk_cache
        if cache in qemu.HOST_DIRECT_CACHES:
            return directio.HONOURED
        return directio.cached(
            f"QEMU disk_cache={cache} on {self.name}'s disk: the guest's O_DIRECT reaches"
            " QEMU, which reads and writes the image through the host page cache; set"
            ' disk_cache = "none" or "directsync" so it reaches the host device'
        )

    # --- capabilities (platforms/capabilities.py) -----------------------------------------
    def cpu_weight(self, shares: int) -> AbstractContextManager[str]:
        return weighted(self, shares, "the QEMU process's cgroup")

    def vcpu_threads(self) -> list[int]:
        return list(self.machine.vcpu_threads) if self.machine is not None else []

    def backend_threads(self) -> ThreadGroup | None:
        """QEMU's non-vCPU threads (main loop, I/O threads: the device back ends)."""
        acct = self.accounting()
        if not acct.threads:
            return None
        return ThreadGroup(
            acct.pids, other_threads(acct.pids, acct.threads), acct.cgroups.get("cpu")
        )

    def fresh_sibling(self) -> VmPlatform:
        return type(self)(self.spec, NAME_PREFIX + secrets.token_hex(3), host=self.host)

    def boot_phases(self) -> BootPhases:
        if self.machine is None:
            raise PlatformError(f"platform '{self.name}' is not provisioned")
        t = self.machine.timings
        labels = {labelkeys.ACCEL_USED: self.accel_used, labelkeys.VCPUS: self.options["vcpus"]}
        return BootPhases(t["boot_s"], t["qmp_s"], labels)

    @contextlib.contextmanager
    def disk_images(self, log: Callable[[str], None]) -> Iterator[Callable[[int, str], float]]:
        tree, _key = image.rootfs(log)
        scratch = paths.run_dir() / f"{self.instance}-img"
        scratch.mkdir(parents=True, exist_ok=True)

        def create(size_gb: int, preallocation: str) -> float:
            target = scratch / f"disk-{size_gb}g.img"
            t0 = time.monotonic()
            image.create_disk(tree, target, size_gb, preallocation)
            took = time.monotonic() - t0
            target.unlink(missing_ok=True)  # free the space before the next size
            return took

        try:
            yield create
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
