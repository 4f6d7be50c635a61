"""Servers inside an environment, load generators on the host (network and web suites).

`ports` picks server ports clear of the host's ephemeral range, `readiness` decides when a
server answers, `server` starts one through `Platform.spawn` and stops it, and `loadgen`
runs pinned host clients and measures their CPU, so a saturated load generator can be told
apart from a saturated server.
"""
