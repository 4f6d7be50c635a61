"""Reading a SQLite store without writing to it or beside it: a results directory shared
read-only (another user's, a read-only NFS export, an archive chmod'ed a-w), a fleet host's
store, a file `virtbench import` reads.

In WAL mode even a reader writes: it needs the store's -wal and -shm files and creates them
when they are missing (a read-only connection then leaves them: only a connection that can
checkpoint removes them). So, by what lies beside the store:
- -wal and -shm: a writer has it open (or died). `mode=ro` reads the WAL through the -shm
  without writing it (SQLite 3.22+), and its read lock there keeps a live writer's
  checkpoints off the pages it reads: a campaign writing and a reader go on together.
- no -wal: no connection has the store open (the last one to close checkpoints the WAL into
  the file and removes it), so the file holds every commit. `immutable=1` reads it without
  locks or side files. A writer that opens the store meanwhile appends to a new -wal; only its
  checkpoint (after 1000 pages, or when it closes) rewrites pages of the file, which this
  reader would not notice: the one case left, a writer starting *and* checkpointing within
  one read command.
- -wal without -shm (a writer died, its -shm removed): SQLite cannot read it in place;
  private_copy copies both and the copy is read.

This module is what a fleet host runs too (fleet/remote.py): the standard library only.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import stat
from pathlib import Path
from urllib.parse import quote

from ..errors import VirtbenchError

SIDE_FILES = ("-wal", "-shm")


def _real(path: Path) -> Path:
    """`path` with its links followed; a link loop is left as it is (SQLite then says it
    cannot open it) instead of Path.resolve's RuntimeError."""
    return Path(os.path.realpath(path))


def _side(path: Path, suffix: str) -> Path:
    """SQLite keeps its side files beside the file a symlink names, not beside the link."""
    path = _real(path)
    return path.with_name(path.name + suffix)


def writable(path: Path) -> bool:
    """Can this process write the store the usual way: the file, the side files that exist,
    and its directory (where SQLite creates them)? False on a read-only mount, even as root."""
    files = [path, *(p for p in (_side(path, s) for s in SIDE_FILES) if p.exists())]
    return os.access(_real(path).parent, os.W_OK | os.X_OK) and all(
        os.access(p, os.W_OK) for p in files
    )


def unwritable(path: Path) -> str | None:
    """Why this process cannot write the store at `path` as SQLite does, None if it can:
    the file and the side files that exist must be regular files it can open for writing
    (SQLite maps the -shm into memory: one it cannot write kills the process with SIGBUS,
    no message), and their directory writable. Nothing is created, truncated or followed."""
    target = _real(path)
    if not os.access(target.parent, os.W_OK | os.X_OK):
        return f"directory {target.parent} is not writable"
    for p in (target, *(_side(target, s) for s in SIDE_FILES)):
        try:
            if not stat.S_ISREG(os.lstat(p).st_mode):
                return f"{p} is not a regular file"
            os.close(os.open(p, os.O_WRONLY | os.O_NOFOLLOW | os.O_NOCTTY | os.O_CLOEXEC))
        except FileNotFoundError:
            continue
        except OSError as exc:
            return f"{p}: {exc.strerror}"
    return None


def ro_uri(path: Path) -> str | None:
    """The URI that reads `path` without creating or changing any file, None if there is
    none (-wal without -shm: read a private_copy)."""
    wal, shm = (_side(path, s) for s in SIDE_FILES)
    where = "file:" + quote(str(_real(path)))  # '?' or '#' in a path is not a query
    if wal.exists():
        return f"{where}?mode=ro" if shm.exists() else None
    return f"{where}?immutable=1"


def connect(path: Path) -> sqlite3.Connection:
    """A read-only connection to the SQLite file `path` that leaves nothing beside it."""
    uri = ro_uri(Path(path))
    if uri is None:
        raise sqlite3.OperationalError(f"{path}: a -wal without its -shm; read a private copy")
    return sqlite3.connect(uri, uri=True, check_same_thread=False)


def private_copy(path: Path, into: Path, name: str = "virtbench.db") -> Path:
    """A copy of the store at `path` (with what its WAL holds) as `into/name`, to read or
    migrate without touching `path`. Through SQLite's online backup where a read-only
    connection can read it (a consistent copy even while a runner writes), else (-wal
    without -shm: no writer can be alive) the files as they lie."""
    copy = Path(into) / name
    try:
        if ro_uri(path) is not None:
            src, dst = connect(path), sqlite3.connect(copy)
            try:
                src.backup(dst)
            finally:
                src.close()
                dst.close()
        else:
            shutil.copyfile(path, copy)
            shutil.copyfile(_side(path, "-wal"), _side(copy, "-wal"))  # committed, not in file
    except sqlite3.Error as exc:
        if "not a database" in str(exc):  # another file altogether, not a damaged store
            raise VirtbenchError(
                f"{path} is not a virtbench store: not an SQLite database ({exc})"
            ) from exc
        raise VirtbenchError(f"cannot read results store {path}: {exc}") from exc
    except OSError as exc:
        raise VirtbenchError(f"cannot read {path}: {exc.strerror or exc}") from exc
    return copy
