"""Re-capture the real /proc, /sys and cgroup files the co-location parsers are tested on.

Run as root on a Linux host: python tests/data/colocation/capture.py
Starts a 2-thread sysbench in a vb- cgroup (cpu, cpuacct, blkio, memory; cgroup v1) that also
writes with O_DIRECT, snapshots its files twice one second apart, then removes everything.
"""

import contextlib
import shutil
import subprocess
import time
from pathlib import Path

HERE = Path(__file__).parent
CG = "vb-capture"
CONTROLLERS = ("cpu", "cpuacct", "blkio", "memory")


def copy(src: Path, dst_root: Path) -> None:
    dst = dst_root / str(src).lstrip("/")
    dst.parent.mkdir(parents=True, exist_ok=True)
    with contextlib.suppress(OSError):  # a task may exit between listing and reading
        dst.write_text(src.read_text())


def snap(dst: Path, pids: list[int]) -> None:
    for pid in pids:
        for task in Path(f"/proc/{pid}/task").iterdir():
            for f in ("schedstat", "status", "children"):
                copy(task / f, dst)
            copy(Path(f"/proc/{task.name}/schedstat"), dst)
            copy(Path(f"/proc/{task.name}/status"), dst)
        copy(Path(f"/proc/{pid}/io"), dst)
    for f in ("stat", "softirqs"):
        copy(Path("/proc") / f, dst)
    for f in ("rx_bytes", "tx_bytes", "rx_packets", "tx_packets"):
        copy(Path("/sys/class/net/lo/statistics") / f, dst)
    for c in CONTROLLERS:
        d = Path(f"/sys/fs/cgroup/{c}/{CG}")
        for f in (
            "tasks",
            "cpuacct.usage",
            "blkio.throttle.io_service_bytes_recursive",
            "memory.usage_in_bytes",
        ):
            if (d / f).exists():
                copy(d / f, dst)


def main() -> None:
    for c in CONTROLLERS:
        Path(f"/sys/fs/cgroup/{c}/{CG}").mkdir(exist_ok=True)
    script = (
        f"for c in {' '.join(CONTROLLERS)}; do echo $$ > /sys/fs/cgroup/$c/{CG}/cgroup.procs; "
        "done; dd if=/dev/zero of=/var/tmp/vb-capture.dat bs=64k count=200 oflag=direct "
        "2>/dev/null; exec sysbench cpu --threads=2 --time=4 run"
    )
    proc = subprocess.Popen(["sh", "-c", script], stdout=subprocess.DEVNULL)
    shell = subprocess.Popen(["sh", "-c", "sleep 4"])  # a parent with a child, for children
    try:
        time.sleep(1.5)
        for name in ("snap1", "snap2"):
            out = HERE / name
            shutil.rmtree(out, ignore_errors=True)
            snap(out, [proc.pid, shell.pid])
            time.sleep(1.0)
    finally:
        proc.wait()
        shell.wait()
        Path("/var/tmp/vb-capture.dat").unlink(missing_ok=True)
        for c in CONTROLLERS:
            Path(f"/sys/fs/cgroup/{c}/{CG}").rmdir()
    (HERE / "pids.txt").write_text(f"{proc.pid} {shell.pid}\n")


if __name__ == "__main__":
    main()
