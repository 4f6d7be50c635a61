"""The name prefix of every host object virtbench creates (cgroups, netns, links, mounts,
dirs, processes), so `virtbench cleanup` can find leftovers after a crash.

Ground level: host plumbing (cgroups, hostnet, images) and platforms all import it.
"""

NAME_PREFIX = "vb-"
