"""The name prefix of every host object virtbench creates (cgroups, netns, links, mounts,
dirs, processes), so `virtbench cleanup` can find leftovers after a crash.

Ground level: host plumbing (cgroups, hostnet, images) and platforms all import it.
"""

NAME_PREFIX = "vb-"


AA_SUFFIX = "-aa"


def aa_twin(baseline: str) -> str:
    """The A/A copy of a campaign's baseline platform (`aa = true`, analysis/floors.py)."""
    return baseline + AA_SUFFIX
