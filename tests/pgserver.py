"""A throwaway PostgreSQL cluster for tests and bench: initdb in a temp dir as the `postgres`
user (initdb refuses root), a server listening only on a unix socket in that dir, stopped
and removed at the end. Debian's PostgreSQL 15 (`postgresql` package)."""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

# the newest installed server (Debian 12: 15)
BIN = max(Path("/usr/lib/postgresql").glob("*/bin"), default=Path("/usr/lib/postgresql/15/bin"),
          key=lambda p: int(p.parent.name) if p.parent.name.isdigit() else 0)  # fmt: skip
USER = "postgres"


def available() -> str | None:
    """Why a cluster cannot be started here, None if it can."""
    if os.geteuid() != 0:
        return "needs root (initdb runs as the postgres user)"
    if not (BIN / "initdb").exists():
        return f"no {BIN}/initdb: apt-get install postgresql"
    try:
        pwd.getpwnam(USER)
    except KeyError:
        return "no postgres user: apt-get install postgresql"
    return None


def _as_postgres(argv: list[str], timeout: float = 60) -> None:
    subprocess.run(
        ["runuser", "-u", USER, "--", *argv],
        check=True,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


class Cluster:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.data = root / "data"
        self.log = root / "server.log"

    def url(self, dbname: str = "postgres") -> str:
        return f"postgresql://{USER}@/{dbname}?host={self.root}"

    def create_db(self, dbname: str) -> str:
        """A new, empty database; its URL."""
        import psycopg

        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{dbname}"')
        return self.url(dbname)

    def stop(self) -> None:
        _as_postgres([str(BIN / "pg_ctl"), "-D", str(self.data), "stop", "-m", "fast"])

    def start(self) -> None:
        # -l: without a log file pg_ctl's stdout pipe stays open as long as the server runs
        _as_postgres(
            [str(BIN / "pg_ctl"), "-D", str(self.data), "-l", str(self.log), "-w", "start"]
        )


@contextlib.contextmanager
def cluster(fsync: bool = False) -> Iterator[Cluster]:
    """fsync off for tests (nothing to keep); on for the bench, as a real server has it."""
    root = Path(tempfile.mkdtemp(prefix="vb-pg-"))
    shutil.chown(root, USER)
    c = Cluster(root)
    try:
        _as_postgres(
            [str(BIN / "initdb"), "-A", "trust", "-U", USER, "-D", str(c.data), "--no-sync"],
            timeout=120,
        )
        conf = (
            "listen_addresses = ''\n"  # the unix socket only: nothing on the network
            f"unix_socket_directories = '{root}'\n"
            f"fsync = {'on' if fsync else 'off'}\n"
            "max_connections = 50\n"
        )
        with open(c.data / "postgresql.conf", "a") as fh:
            fh.write(conf)
        c.start()
        yield c
    finally:
        with contextlib.suppress(subprocess.SubprocessError, OSError):
            c.stop()
        shutil.rmtree(root, ignore_errors=True)
