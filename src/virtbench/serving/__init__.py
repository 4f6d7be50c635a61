"""Servers inside an environment, load generators on the host (network and web suites).

`readiness` decides when a server answers, `server` starts one through `Platform.spawn` on
a port of `virtbench.ports` (clear of the host's ephemeral range) and stops it, and `loadgen`
runs pinned host clients and measures their CPU, so a saturated load generator can be told
apart from a saturated server.
"""
