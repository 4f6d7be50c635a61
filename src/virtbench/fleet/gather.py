"""Every host's results in one place: the fetched stores stay as RESULTS/fleet/<id>/HOST.db
(each a complete virtbench store of that host's run)."""

from __future__ import annotations

from .state import Fleet


def gather(fleet: Fleet) -> list[str]:
    """Lines saying where each host's results are and how to read them."""
    kept = [h for h in fleet.hosts if fleet.db(h).exists()]
    if not kept:
        return ["no host stored any results"]
    lines = [f"{h}: {fleet.db(h)}" for h in kept]
    lines.append(
        "each file is a host's virtbench store: read one with"
        " `virtbench results --results-dir DIR` after copying it to DIR/virtbench.db"
    )
    return lines
