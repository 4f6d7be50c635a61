"""Where build and fetch steps keep what they make: /var/lib/virtbench/<kind> as root, else
~/.cache/virtbench/<kind>; an environment variable overrides either (tests, CI)."""

from __future__ import annotations

import os
from pathlib import Path


def cache_root(kind: str, override_env: str) -> Path:
    override = os.environ.get(override_env)
    if override:
        return Path(override)
    if os.geteuid() == 0:
        return Path("/var/lib/virtbench") / kind
    return Path.home() / ".cache" / "virtbench" / kind
