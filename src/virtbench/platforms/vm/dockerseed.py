"""The VM image's Docker data root, seeded when the image is built.

A guest's dockerd (guestdocker.py) needs the shared tree imported as `vb-rootfs:<key>`; done in
the guest, under TCG, that import takes minutes and every fresh VM (each provisioned group of
cells) would repeat it. So the image build imports the tree once on the host, with a private
dockerd whose data root is a staging directory (the same Debian dockerd as in the guest;
no iptables, no bridge, its own socket: the host's networking and other daemons are left
alone), and writes the ext4 image from a read-only overlay of that data root at the guest's
data-root path over the tree. The guest then finds the image in place. Without dockerd on the
host (or if seeding fails) the image is built from the tree alone and the guest imports it on
first use, as before; the label `docker_image` says which happened.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from ... import cleanup, tools
from ...errors import PlatformError
from ...naming import NAME_PREFIX
from ..container import dockerd
from ..container.docker import LABEL, image_ref
from .guestdocker import PATHS

STAGE_PREFIX = NAME_PREFIX + "seed-"
RUN_ROOT = Path("/run/virtbench")  # sockets: short paths (AF_UNIX's 108-byte limit)
START_TIMEOUT_S = 120.0
IMPORT_TIMEOUT_S = 900.0


def seedable(tree: Path) -> bool:
    """Whether the host can seed: its dockerd runs, and the guest will have one."""
    return tools.which("dockerd") is not None and (tree / "usr/sbin/dockerd").exists()


def seed_argv(stage: Path, run: Path) -> list[str]:
    """The staging dockerd (pure: unit-tested): the guest's data-root path under the stage,
    nothing touching the host's network."""
    paths = dockerd.DaemonPaths(
        socket=str(run / "d.sock"),
        data_root=str(stage / "lower" / PATHS.data_root.lstrip("/")),
        exec_root=str(run / "exec"),
        pidfile=str(run / "d.pid"),
    )
    return [*dockerd.daemon_argv(True, paths), "--iptables=false"]


def _die_with_parent() -> None:
    """In the child: SIGKILL when virtbench dies (its containerd has the same from dockerd)."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


@contextlib.contextmanager
def seeded_tree(
    tree: Path, key: str, work: Path, log: Callable[[str], None]
) -> Iterator[tuple[Path, bool]]:
    """(the directory to build the image from, whether it holds the seeded data root)."""
    if not seedable(tree):
        yield tree, False
        return
    stage = work / f"{STAGE_PREFIX}{key}-{os.getpid()}"
    run = RUN_ROOT / f"{STAGE_PREFIX}{os.getpid()}"
    merged = stage / "merged"
    mounted = False
    try:
        _remove(stage, run)
        merged.mkdir(parents=True)
        run.mkdir(parents=True)
        t0 = time.monotonic()
        _import(tree, key, stage, run)
        subprocess.run(
            ["mount", "-t", "overlay", "overlay", "-o", f"ro,lowerdir={stage / 'lower'}:{tree}",
             str(merged)],
            check=True, capture_output=True, text=True,
        )  # fmt: skip
        mounted = True
        log(f"seeded the VM image's Docker data root with {image_ref(key)} in "
            f"{time.monotonic() - t0:.0f}s")  # fmt: skip
    except (PlatformError, OSError, subprocess.SubprocessError) as exc:
        log(f"could not seed the VM image with a Docker image ({exc}); guests import it on "
            "first use instead")  # fmt: skip
        _remove(stage, run)
        yield tree, False
        return
    try:
        yield merged, mounted
    finally:
        _remove(stage, run)


def _import(tree: Path, key: str, stage: Path, run: Path) -> None:
    argv = seed_argv(stage, run)
    argv[0] = tools.which("dockerd") or "dockerd"
    sock = f"unix://{run / 'd.sock'}"
    logf = run / "dockerd.log"
    with open(logf, "w") as out:
        proc = subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=out, stderr=out,
            start_new_session=True, preexec_fn=_die_with_parent,
        )  # fmt: skip
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while not dockerd.answers(str(run / "d.sock"), timeout=2):
            if proc.poll() is not None or time.monotonic() > deadline:
                tail = logf.read_text(errors="replace").strip()[-600:]
                raise PlatformError(f"the staging dockerd did not start: {tail}")
            time.sleep(0.2)
        tar = subprocess.Popen(
            ["tar", "-C", str(tree), "--numeric-owner", "-cf", "-", "."],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        r = subprocess.run(
            [dockerd.cli(), "--host", sock, "import", "--change", f"LABEL {LABEL}=1", "-",
             image_ref(key)],
            stdin=tar.stdout, capture_output=True, text=True, timeout=IMPORT_TIMEOUT_S,
        )  # fmt: skip
        tar.stdout.close()  # type: ignore[union-attr]
        if tar.wait() != 0 or r.returncode != 0:
            raise PlatformError(f"docker import failed: {r.stderr.strip()[-600:]}")
    finally:
        _stop(proc)


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _remove(stage: Path, run: Path) -> None:
    """Unmount and delete a stage (also one a crashed build left)."""
    for path in (stage / "merged", *_mounts_under(stage), *_mounts_under(run)):
        subprocess.run(["umount", "-l", str(path)], capture_output=True)
    shutil.rmtree(stage, ignore_errors=True)
    shutil.rmtree(run, ignore_errors=True)


def _mounts_under(path: Path) -> list[str]:
    prefix = str(path).rstrip("/") + "/"
    with contextlib.suppress(OSError):
        lines = Path("/proc/self/mountinfo").read_text().splitlines()
        return sorted((ln.split()[4] for ln in lines if ln.split()[4].startswith(prefix)),
                      key=len, reverse=True)  # fmt: skip
    return []


@cleanup.register("vm image seeds")
def clean() -> list[str]:
    """Stages of image builds whose process died (its dockerd died with it)."""
    from .paths import image_dir

    removed = []
    for parent in (image_dir(), RUN_ROOT):
        if not parent.is_dir():
            continue
        for d in parent.glob(f"{STAGE_PREFIX}*"):
            pid = d.name.rsplit("-", 1)[-1]
            if pid.isdigit() and Path(f"/proc/{pid}").exists():
                continue
            _remove(d, d)
            removed.append(f"VM image seed stage {d}")
    return removed
