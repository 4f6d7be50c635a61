"""gVisor (runsc) with `--network=host`: its host-network sockets break blocking read(2).

Measured with runsc 20221219 (Debian 12): read(2) on a *blocking* TCP socket with no data
yet returns EAGAIN at once instead of waiting; recv(2) on the same socket waits as it should.
iperf3 reads its control connection with read(2) (`Nread`) right after asking the peer for
something (parameters, results), so whichever end is quicker loses the race and the test
dies: "unable to receive parameters from client: Resource temporarily unavailable" or
"unable to receive results: Bad file descriptor" on the server, "unable to send control
message: Broken pipe" on the client (1-2 runs in 3 here).

The fix for the tools named in SHIM_TOOLS: a preloaded read(2) that, when the kernel says
EAGAIN on a blocking socket, waits in recv(2) as Linux's read(2) would. It only acts on
that error path: non-blocking sockets (iperf3's data streams) and files are untouched, so
the data path measured is gVisor's own. Samples of such a platform carry the `read_shim`
label.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from ... import probes_build, tools
from ...errors import VirtbenchError

# tools whose control path relies on read(2) blocking on a socket
SHIM_TOOLS = ("iperf3",)
SHIM_INSIDE = "/usr/local/lib/virtbench/vb-blockread.so"
SHIM_LABEL = "read(2) EAGAIN on a blocking socket waits in recv(2): " + ",".join(SHIM_TOOLS)

SHIM_C = r"""
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

static ssize_t (*real_read)(int, void *, size_t);

ssize_t read(int fd, void *buf, size_t count) {
    if (!real_read)
        real_read = (ssize_t (*)(int, void *, size_t))dlsym(RTLD_NEXT, "read");
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
"""

CFLAGS = ("-O2", "-shared", "-fPIC", "-Wall", "-Wextra", "-Werror")


def build_shim() -> Path:
    """The shim's host path, built once per source and compiler (cached like the probes)."""
    tools.require(["cc"], needed_by='runtime = "runsc" with network = "host" (iperf3)')
    h = hashlib.sha256((SHIM_C + " ".join(CFLAGS)).encode())
    h.update((tools.version("cc") or "none").encode())
    final = probes_build.cache_root() / f"gvisor-{h.hexdigest()[:16]}" / "vb-blockread.so"
    if final.exists():
        return final
    final.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=final.parent) as tmp:
        (Path(tmp) / "shim.c").write_text(SHIM_C)
        argv = [tools.which("cc") or "cc", *CFLAGS, "-o", "shim.so", "shim.c", "-ldl"]
        r = subprocess.run(argv, cwd=tmp, capture_output=True, text=True, timeout=120)
        if r.returncode != 0:
            raise VirtbenchError(f"building the gVisor read shim failed: {r.stderr[-800:]}")
        os.replace(Path(tmp) / "shim.so", final)  # atomic: a concurrent build sees all or none
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
    argv = ["runsc", "--root", tempfile.mkdtemp(prefix="vb-runsc-probe-"), "--rootless"]
    argv += ["--platform=ptrace", "--network=host", "do", sys.executable, "-c", _PROBE]
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
