"""The host's disk ceiling: what native O_DIRECT reaches on the device that holds the
platforms' workdirs, at a high queue depth, median of several short fio passes.

An O_DIRECT figure above it (beyond its documented margin) cannot come from that device,
whatever the platform: analysis/plausibility.py flags it. The pure part (the ceiling, its
limits, its form in a run's host facts) is ground-level `virtbench.diskceiling`, which
analysis reads; `cache` keeps one per device + filesystem + kernel in a root-owned 0700
directory, `measure` runs fio, `ensure` gives a cached or freshly measured one.
"""
