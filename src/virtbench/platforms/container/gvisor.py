"""gVisor (runsc) with `--network=host`: two ways its host-network sockets differ from Linux.

Measured with runsc 20221219 (Debian 12): read(2) on a *blocking* TCP socket with no data
yet returns EAGAIN at once instead of waiting; recv(2) on the same socket waits as it should.
iperf3 reads its control connection with read(2) (`Nread`) right after asking the peer for
something (parameters, results), so whichever end is quicker loses the race and the test
dies: "unable to receive parameters from client: Resource temporarily unavailable" or
"unable to receive results: Bad file descriptor" on the server, "unable to send control
message: Broken pipe" on the client (often: docs/code-measurements.md).
recvfrom(2) with MSG_NOSIGNAL (a send flag Linux ignores on receive) fails with EINVAL, and
without it, on a TCP socket with a buffer for the source address, the sentry itself panics
(index out of range in UnmarshalSockAddr) and the whole sandbox dies: sockperf's server does
both on every receive.

The fix for the tools named in SHIM_TOOLS: a preloaded read(2) that, when the kernel says
EAGAIN on a blocking socket, waits in recv(2) as Linux's read(2) would, and a recvfrom(2)
that drops MSG_NOSIGNAL and asks a stream socket for no source address. The read fix acts
only on that error path (non-blocking sockets, iperf3's data streams, and files are
untouched); the recvfrom fixes give what Linux gives: the data path measured is gVisor's
own. Cells of such a platform carry the platform label `read_shim`.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
from pathlib import Path

from ... import cachedir, doctor_registry, ownedtmp, probes_build, pychild, tools
from ...doctor_registry import Check
from ...errors import VirtbenchError
from .. import engine_config


def direct_io_mechanism(
    storage: str, version: str | None, config: dict[str, str] | None = None
) -> str:
    """Why O_DIRECT in a runsc container, as virtbench runs it, is not a device figure, by
    the build's own mechanism (`config`: its effective configuration, engine_config.py).

    Without directfs (Debian's 20221219): the gofer filesystem sends an O_DIRECT read past
    the sentry's page cache to the "remote file", the host file as the gofer opened it,
    without O_DIRECT: the host page cache serves it (faster than the host's own O_DIRECT
    read: docs/gvisor.md).
    With directfs (current gVisor's default): the sentry opens the host file itself, but
    still without O_DIRECT (fsimpl/gofer openHandle passes only read/write/trunc), so the
    host page cache serves it too. With a root overlay (overlay2 root:..., current default
    root:self) the overlay data path's files live in the sentry's own tmpfs (memory, backed
    by a host file for "self"): O_DIRECT there never leaves the sandbox."""
    cfg = config or {}
    what = f"gVisor (runsc {version or 'version unknown'}, storage={storage})"
    overlay = cfg.get("overlay2", "")
    if storage == "overlay" and overlay.startswith(("root:", "all:")):
        return (
            f"{what} keeps the container's root, and so the overlay data path, in its root"
            f" overlay (overlay2={overlay}): a tmpfs in the sentry's memory; O_DIRECT there"
            ' never reaches a host file: use storage = "volume" or measure the device on'
            " native"
        )
    if cfg.get("directfs") == "true":
        return (
            f"{what} opens host files in its sentry (directfs) without O_DIRECT: an O_DIRECT"
            " read skips the sentry's cache and is served by the host page cache; no runsc"
            " flag passes O_DIRECT to the host: measure the device on native or a runc/crun"
            " volume"
        )
    return (
        f"{what} serves file I/O from its sentry's page cache and, for O_DIRECT, from host"
        " files its gofer opened without O_DIRECT (the host page cache); no runsc flag"
        " virtbench sets reaches the device: measure the device on native or a runc/crun"
        " volume"
    )


# tools whose control path relies on read(2) blocking on a socket
SHIM_TOOLS = ("iperf3", "sockperf")
SHIM_INSIDE = "/usr/local/lib/virtbench/vb-blockread.so"
SHIM_LABEL = (
    "read(2) EAGAIN on a blocking socket waits in recv(2); recvfrom(2) without MSG_NOSIGNAL,"
    " and without a source address on stream sockets: " + ",".join(SHIM_TOOLS)
)

SHIM_C = r"""
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#define NEXT(name) \
    static __typeof__(name) *real_##name; \
    if (!real_##name) \
        real_##name = (__typeof__(name) *)dlsym(RTLD_NEXT, #name)

ssize_t read(int fd, void *buf, size_t count) {
    NEXT(read);
    ssize_t r = real_read(fd, buf, count);
    if (r >= 0 || errno != EAGAIN)
        return r;
    int flags = fcntl(fd, F_GETFL);
    if (flags < 0 || (flags & O_NONBLOCK)) {
        errno = EAGAIN;
        return r;
    }
    r = recv(fd, buf, count, 0);
    if (r < 0 && errno == ENOTSOCK) /* not a socket: keep read(2)'s own answer */
        errno = EAGAIN;
    return r;
}

/* socket type per fd (0: not known yet), set where sockets are made so a reused number
   is never read stale; others are asked once (SO_TYPE) */
static unsigned char kind[65536];

static void remember(int fd, int type) {
    if (fd >= 0 && fd < 65536)
        kind[fd] = (unsigned char)((type & 0xf) + 1);
}

static int stream(int fd) {
    if (fd < 0 || fd >= 65536)
        return 0;
    if (!kind[fd]) {
        int type = 0;
        socklen_t len = sizeof(type);
        if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) < 0)
            return 0;
        remember(fd, type);
    }
    return kind[fd] == SOCK_STREAM + 1;
}

int socket(int domain, int type, int protocol) {
    NEXT(socket);
    int fd = real_socket(domain, type, protocol);
    remember(fd, type);
    return fd;
}

int accept(int fd, struct sockaddr *a, socklen_t *alen) {
    NEXT(accept);
    int s = real_accept(fd, a, alen);
    remember(s, SOCK_STREAM);
    return s;
}

int accept4(int fd, struct sockaddr *a, socklen_t *alen, int flags) {
    NEXT(accept4);
    int s = real_accept4(fd, a, alen, flags);
    remember(s, SOCK_STREAM);
    return s;
}

/* MSG_NOSIGNAL is a send flag Linux ignores on receive; hostinet refuses it (EINVAL). On a
   stream socket Linux fills no source address; hostinet's sentry panics trying (index out of
   range in UnmarshalSockAddr): ask without one, as Linux answers (address length 0) */
ssize_t recvfrom(int fd, void *buf, size_t n, int flags, struct sockaddr *a, socklen_t *alen) {
    NEXT(recvfrom);
    flags &= ~MSG_NOSIGNAL;
    if (a && stream(fd)) {
        ssize_t r = real_recvfrom(fd, buf, n, flags, NULL, NULL);
        if (r >= 0 && alen)
            *alen = 0;
        return r;
    }
    return real_recvfrom(fd, buf, n, flags, a, alen);
}
"""

CFLAGS = ("-O2", "-shared", "-fPIC", "-Wall", "-Wextra", "-Werror")


def build_shim() -> Path:
    """The shim's host path, built once per source and compiler (cached like the probes)."""
    tools.require(["cc"], needed_by='runtime = "runsc" with network = "host" (iperf3)')
    h = hashlib.sha256((SHIM_C + " ".join(CFLAGS)).encode())
    h.update((tools.version("cc") or "none").encode())
    entry = probes_build.cache_root() / f"gvisor-{h.hexdigest()[:16]}"
    final = entry / "vb-blockread.so"
    if final.exists():
        return final
    if entry.is_dir():  # an older version compiled inside it and was killed: no owner to ask
        shutil.rmtree(entry, ignore_errors=True)
    # staged beside the probes (cleanup sweeps a killed build's), renamed whole into place
    with cachedir.building(entry, lambda d: (d / final.name).exists()) as tmp:
        (tmp / "shim.c").write_text(SHIM_C)
        argv = [tools.which("cc") or "cc", *CFLAGS, "-o", final.name, "shim.c", "-ldl"]
        r = subprocess.run(argv, cwd=tmp, capture_output=True, text=True, timeout=120)
        if r.returncode != 0:
            raise VirtbenchError(f"building the gVisor read shim failed: {r.stderr[-800:]}")
        (tmp / "shim.c").unlink()
    return final


def install_shim(host_path) -> None:
    """Copy the shim into a container whose paths map to the host through `host_path`."""
    target = host_path(SHIM_INSIDE)
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(build_shim(), target)
    target.chmod(0o755)


# A blocking socket with no data yet must make read(2) wait (the peer writes 0.2 s later)
_PROBE = """
import os, socket, threading, time
l = socket.socket(); l.bind(("127.0.0.1", 0)); l.listen(1)
def peer():
    c = socket.create_connection(l.getsockname()); time.sleep(0.2); c.sendall(b"x"); c.close()
threading.Thread(target=peer).start()
s, _ = l.accept()
try:
    print("blocks" if os.read(s.fileno(), 1) == b"x" else "eof")
except OSError as e:
    print("errno", e.errno)
"""


def read_blocks() -> tuple[bool | None, str]:
    """Whether read(2) waits on a blocking socket under runsc's host network: (True, ...),
    (False, what it did) or (None, why it could not be checked). About a second."""
    argv = ["runsc", "--root", ownedtmp.mkdtemp("runsc-probe"), "--rootless"]
    argv += ["--platform=ptrace", "--network=host", "do", *pychild.code_argv(_PROBE)]
    try:
        r = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError) as exc:
        return None, f"runsc did not run: {exc}"
    finally:
        shutil.rmtree(argv[2], ignore_errors=True)
    out = r.stdout.strip().splitlines()
    if r.returncode != 0 or not out:
        return None, f"runsc exited {r.returncode}: {(r.stderr or r.stdout).strip()[-200:]}"
    if out[-1] == "blocks":
        return True, "read(2) waits"
    return False, out[-1].replace("errno 11", "EAGAIN (errno 11) at once")


_CONFIG_CACHE: dict[tuple[str, ...], dict[str, str]] = {}


def effective_config(base: list[str]) -> dict[str, str]:
    """The configuration runsc runs containers with, given the global flags virtbench passes
    (`base`: binary, --root, --platform, --network...): runsc writes it to its debug log at
    every start, defaults included, so a harmless `list` with a debug log says it. Cached
    per argv (one runsc start each); {} when runsc cannot say."""
    key = tuple(base)
    if key in _CONFIG_CACHE:
        return _CONFIG_CACHE[key]
    with ownedtmp.tempdir("runsc-config") as d:
        argv = [*base, "--debug", f"--debug-log={d}/", "list"]
        try:
            subprocess.run(argv, capture_output=True, timeout=30, check=False)
        except (OSError, subprocess.SubprocessError):
            return {}
        logs = sorted(Path(d).glob("*"))
        text = "".join(p.read_text(errors="replace") for p in logs if p.is_file())
    found = engine_config.runsc_config(text)
    if found:
        _CONFIG_CACHE[key] = found
    return found


@doctor_registry.register(70, needs_root=True)
def doctor_check() -> Check | None:
    """runsc's host network, probed: what virtbench works around for which tools."""
    if tools.which("runsc") is None:
        return None
    blocks, what = read_blocks()
    version = tools.version("runsc")
    if blocks is None:
        return Check("gvisor network", "warn", f"runsc {version}: not probed ({what})")
    if blocks:
        return Check("gvisor network", "ok", f"runsc {version} --network=host: {what}")
    return Check(
        "gvisor network",
        "warn",
        f"runsc {version} --network=host: read(2) on a blocking socket returns {what}"
        " (Linux waits); with 20221219 also recvfrom(2) refuses MSG_NOSIGNAL and a TCP"
        " source-address buffer panics the sandbox. iperf3 and sockperf run there with a shim that"
        " restores Linux's answers (platform label read_shim); nginx/wrk need none",
        'other tools that read(2) a blocking socket fail under runtime = "runsc"',
    )
