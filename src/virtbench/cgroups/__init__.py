"""Control groups on cgroup v1 (legacy/hybrid) and v2 (unified): create, limit, account, destroy.

Every group virtbench makes lives under a `virtbench` parent and is named with NAME_PREFIX:
v1 `/sys/fs/cgroup/<controller>/virtbench/vb-xxxx` (one directory per hierarchy), v2
`/sys/fs/cgroup/virtbench/vb-xxxx`. The registered cleaner removes leftovers by that prefix.

`layout` finds the hierarchies, `group` is one group (`Cgroup`) and the cleaner, `rt` the
real-time budget allocator (v1 with RT group scheduling), `budget` a CPU quota several
environments share (`CpuBudget`, groups nested in it). Import from here.
"""

from __future__ import annotations

from .budget import CpuBudget, ThrottleCount
from .group import (
    SHARES_MAX,
    SHARES_MIN,
    Cgroup,
    clean,
    idle_weight,
    leftovers,
    rebalance_parent,
    shares_to_weight,
)
from .layout import (
    PARENT,
    ROOT,
    V1_CONTROLLERS,
    V2_CONTROLLERS,
    Layout,
    hybrid_v2_mounts,
    parse_kv,
    parse_v1_mounts,
    v1_hierarchies,
    version,
)
from .rt import (
    RT_AUTO,
    grant,
    headroom,
    release_rt,
    rt_children,
    rt_free,
    rt_layout,
    rt_of,
    rt_supported,
)

__all__ = [
    "PARENT",
    "ROOT",
    "RT_AUTO",
    "SHARES_MAX",
    "SHARES_MIN",
    "V1_CONTROLLERS",
    "V2_CONTROLLERS",
    "Cgroup",
    "CpuBudget",
    "ThrottleCount",
    "Layout",
    "clean",
    "idle_weight",
    "grant",
    "headroom",
    "hybrid_v2_mounts",
    "leftovers",
    "parse_kv",
    "parse_v1_mounts",
    "rebalance_parent",
    "release_rt",
    "rt_children",
    "rt_free",
    "rt_layout",
    "rt_of",
    "rt_supported",
    "shares_to_weight",
    "v1_hierarchies",
    "version",
]
