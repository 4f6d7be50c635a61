"""Host state virtbench keeps between runs (the disk ceiling, A/A floors): JSON records in a
directory only root can use, /var/lib/virtbench/KIND as root, ~/.cache/virtbench/KIND
otherwise, $VIRTBENCH_STATE_DIR/KIND for tests. The safety rules are safefs's (no symlinks,
no directory or record another user could have planted, atomic writes, explicit modes);
this module only names the places and speaks JSON."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from . import safefs
from .errors import VirtbenchError

ENV = "VIRTBENCH_STATE_DIR"


class StateError(VirtbenchError):
    """A state directory or record that cannot be trusted or written."""


def root(kind: str) -> Path:
    if override := os.environ.get(ENV):
        return Path(override) / kind
    if os.geteuid() == 0:
        return Path("/var/lib/virtbench") / kind
    return Path.home() / ".cache" / "virtbench" / kind


def safe_dir(d: Path, what: str, env: str = ENV) -> Path:
    """`d`, made 0700 if absent; refused if it is a symlink, another user's or writable by
    others (another user could plant the state that judges our figures)."""
    try:
        return safefs.state_dir(d)
    except safefs.UnsafePath as exc:
        raise StateError(f"{what}: {exc} (or set {env})") from None


def read_json(path: Path) -> Any | None:
    """The JSON of a trusted record, or None (absent, not to be believed, not JSON)."""
    text = safefs.read_state(path)
    if text is None:
        return None
    try:
        return json.loads(text)
    except ValueError:
        return None


def write_json(path: Path, obj: Any, kind: str) -> Path:
    """Write `obj` to `path` whole or not at all (mode 0600)."""
    try:
        safefs.write_file(path, json.dumps(obj, indent=1, sort_keys=True), 0o600, kind)
    except safefs.UnsafePath as exc:
        raise StateError(str(exc)) from None
    return path
