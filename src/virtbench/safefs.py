"""Files and directories root can write without being turned against the host.

virtbench runs as root in directories other users may write (a results directory, /tmp, the
directory an `--output` names). Opening or renaming there by path lets a planted symlink,
device node or fifo redirect root's write. Every virtbench writer goes through this module:

- `write_file`: temp file (O_EXCL) beside the target, then rename; refused when the target
  exists and is not a regular file (a device, fifo, directory or symlink is never replaced);
- `open_nofollow`: open a file by path without following a final symlink, regular files only;
- `state_dir` / `read_state` / `write_state`: virtbench's own records (owner claims, state
  files, tune.json): root-owned directories, files 0600, believed only when root owns them
  and nobody else can write them (`trusted`);
- `check_results_dir`: refuse a results directory others can write that is not sticky.

Ground level: the standard library, `errors` and `ownedtmp` only.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from . import ownedtmp
from .errors import VirtbenchError

RUN_ROOT = Path("/run/virtbench")  # virtbench's host state (owners, records, locks)
PRIVATE_TMP = RUN_ROOT / "tmp"  # root-only scratch: ssh control sockets, JMeter's files


class UnsafePath(VirtbenchError):
    """A path virtbench will not write through: not a regular file, or in a place others
    control. The message names the path and why."""


def _kind(mode: int) -> str:
    for test, name in (
        (stat.S_ISLNK, "a symbolic link"),
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISFIFO, "a fifo"),
        (stat.S_ISSOCK, "a socket"),
    ):
        if test(mode):
            return name
    return "not a regular file"


def check_target(path: Path) -> None:
    """Refuse `path` if it exists and is not a regular file (symlinks are not followed)."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    except OSError as exc:
        raise UnsafePath(f"cannot write {path}: {exc.strerror or exc}") from exc
    if not stat.S_ISREG(st.st_mode):
        raise UnsafePath(
            f"refusing to write {path}: it exists and is {_kind(st.st_mode)}, not a regular"
            " file; name a new file or a regular one"
        )


def write_file(path: Path, data: str | bytes, mode: int = 0o644, kind: str = "write") -> None:
    """Write `data` to `path` whole or not at all: a hidden owner-named temp file (O_EXCL:
    never an existing name) in the same directory, renamed over `path`. A target that
    exists and is not a regular file is refused before anything is written and again just
    before the rename; the rename replaces a directory entry, never writes through it."""
    path = Path(path)
    check_results_dir(path.parent)
    check_target(path)
    ownedtmp.remove_stale(path.parent, kinds=(kind,))  # a killed writer's leftover here
    suffix = path.suffix if path.suffix[1:].isalnum() and path.suffix.isascii() else ""
    fd, tmp = ownedtmp.mkstemp(kind, suffix=suffix, dir=path.parent, hidden=True)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data.encode("utf-8") if isinstance(data, str) else data)
            os.fchmod(f.fileno(), mode)  # explicit: whatever the umask
        check_target(path)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def make_dirs(path: Path, mode: int = 0o755) -> Path:
    """os.makedirs with `mode` on every directory it makes, whatever the umask (under umask
    000 makedirs makes them 0777: writable by everyone)."""
    path = Path(path)
    missing = []
    p = path
    while not os.path.lexists(p) and p != p.parent:
        missing.append(p)
        p = p.parent
    for d in reversed(missing):
        try:
            os.mkdir(d, mode)
            os.chmod(d, mode)
        except FileExistsError:
            pass
    return path


def open_nofollow(path: Path, flags: int, mode: int = 0o600) -> int:
    """os.open without following a final symlink; the fd of a regular file or UnsafePath.
    O_NONBLOCK so that a planted fifo cannot hang the open."""
    try:
        fd = os.open(path, flags | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK, mode)
    except OSError as exc:
        if exc.errno == 40:  # ELOOP: the final component is a symlink
            raise UnsafePath(f"refusing to open {path}: it is a symbolic link") from exc
        raise
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise UnsafePath(f"refusing to open {path}: it is {_kind(st.st_mode)}")
    os.set_blocking(fd, True)
    return fd


# --- virtbench's own records -------------------------------------------------------------
def _owner_ok(st: os.stat_result) -> bool:
    return st.st_uid in (0, os.geteuid()) and not st.st_mode & (stat.S_IWGRP | stat.S_IWOTH)


def trusted(path: Path) -> bool:
    """A record virtbench can believe: a regular file (not a symlink) owned by root (or this
    user) that no one else can write."""
    try:
        st = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISREG(st.st_mode) and _owner_ok(st)


def trusted_dir(path: Path) -> bool:
    """A directory (not a symlink) owned by root (or this user) that no one else can write."""
    try:
        st = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISDIR(st.st_mode) and _owner_ok(st)


def state_dir(path: Path, mode: int = 0o700) -> Path:
    """Make `path` (and missing parents) a directory only its owner can write, `mode` set
    explicitly whatever the umask. An existing one is accepted only as a real directory (not
    a symlink) owned by root (or this user) and not writable by others; it is then given
    `mode`. Anything else is refused: someone else could have planted what is in it."""
    path = Path(path)
    try:
        os.mkdir(path, mode)
        os.chmod(path, mode)  # mkdir's mode is masked by the umask
    except FileExistsError:
        pass
    except FileNotFoundError:
        state_dir(path.parent, 0o755)
        return state_dir(path, mode)
    st = os.lstat(path)
    if not stat.S_ISDIR(st.st_mode) or not _owner_ok(st):
        raise UnsafePath(
            f"refusing to use {path} for virtbench's state: it is"
            f" {_kind(st.st_mode) if not stat.S_ISDIR(st.st_mode) else 'a directory'} owned by"
            f" uid {st.st_uid} with mode {stat.S_IMODE(st.st_mode):04o}; it must be a directory"
            " owned by root that only root can write (remove it and retry)"
        )
    if stat.S_IMODE(st.st_mode) != mode:
        os.chmod(path, mode)
    return path


def read_state(path: Path) -> str | None:
    """The text of a trusted record (see `trusted`), None if it is missing or not to be
    believed (another owner, writable by others, not a regular file)."""
    try:
        fd = open_nofollow(path, os.O_RDONLY)
    except (OSError, UnsafePath):
        return None
    with os.fdopen(fd, "rb") as f:
        if not _owner_ok(os.fstat(f.fileno())):
            return None
        return f.read().decode("utf-8", errors="replace")


def write_state(path: Path, text: str, mode: int = 0o600) -> None:
    """Write a record atomically in a state directory (made safe first), mode explicit."""
    path = Path(path)
    state_dir(path.parent, _dir_mode(path.parent))
    write_file(path, text, mode=mode, kind="state")


def _dir_mode(d: Path) -> int:
    """A state directory's mode: /run/virtbench itself may be listed; its contents are
    root's only."""
    return 0o755 if Path(d) == RUN_ROOT else 0o700


def private_tmp() -> Path:
    """A root-only 0700 scratch directory (PRIVATE_TMP) when root, else the user's own
    temporary directory (tempfile's: per-user randomness keeps names unguessable)."""
    if os.geteuid() == 0:
        state_dir(RUN_ROOT, 0o755)
        return state_dir(PRIVATE_TMP, 0o700)
    import tempfile

    return Path(tempfile.gettempdir())


# --- results directories -----------------------------------------------------------------
def check_results_dir(path: Path) -> None:
    """Refuse to write into a directory other users can write unless it is sticky: there a
    user could plant or swap a symlink (virtbench.db, .locks, reports) between our checks
    and our writes. Sticky directories (/tmp) protect each owner's names."""
    try:
        st = os.stat(path)
    except OSError:
        return  # not made yet: its creator (we) sets its mode
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH) and not st.st_mode & stat.S_ISVTX:
        raise UnsafePath(
            f"refusing results directory {path}: it is writable by other users"
            f" (mode {stat.S_IMODE(st.st_mode):04o}) and not sticky, so they could plant"
            " symlinks root would follow; chmod go-w it (or +t) or use another directory"
        )
