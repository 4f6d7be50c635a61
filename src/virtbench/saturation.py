"""When a rate sweep saw its server saturated: the rule the drivers apply as a sweep runs
(drivers/sweep.py) and analysis applies again to stored sweeps (analysis/colocation.py).

Ground level: imports nothing of virtbench, so analysis, which reads the store only and
imports no driver, shares the numbers instead of keeping copies.
"""

from __future__ import annotations

# a step that served this share of its offered rate had not saturated the server
SERVED_IN_FULL = 0.95
# a sweep's `stopped` label when it ran out of steps (no fall, no errors stopped it)
MAX_STEPS = "max-steps"
# its `stopped` label when it went on past its plan while served in full and ended on a
# step that was not (two in a row, or its last): the server was seen saturated
SATURATED = "saturated"
