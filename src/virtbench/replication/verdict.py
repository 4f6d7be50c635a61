"""From a judged ratio (analysis/ratios.judge, the project's one rule) to a replication
verdict: does this run show what the paper found, in direction and in size?"""

from __future__ import annotations

from ..analysis import ratios
from ..analysis.ratios import Ratio, Verdict
from .model import HIGHER, LOWER, Finding

REPRODUCES = "reproduces"
PARTLY = "partly"
DOES_NOT = "does not"
NOT_COMPARABLE = "not comparable here"
NOT_MEASURED = "not measured"
OUTCOMES = (REPRODUCES, PARTLY, DOES_NOT, NOT_COMPARABLE, NOT_MEASURED)

# the ratios.judge outcome that shows the paper's direction (x against base, raw ratio)
_SHOWN = {HIGHER: ratios.FASTER, LOWER: ratios.SLOWER}


def pct(r: float) -> str:
    return f"{(r - 1.0) * 100.0:+.1f}%"


def _paper(f: Finding) -> str:
    return f"paper {pct(f.paper)} ({f.paper_text}), reproducing: {pct(f.band[0])}..{pct(f.band[1])}"


def replicate(f: Finding, r: Ratio, judged: Verdict) -> tuple[str, str]:
    """(verdict, reason) of a measured ratio x/base (raw: > 1 = x's value is larger)."""
    in_band = f.band[0] <= r.value <= f.band[1]
    here = f"here {pct(r.value)} ({judged.outcome}: {judged.reason})"
    if f.expect in _SHOWN:
        want, opposite = _SHOWN[f.expect], ({ratios.FASTER, ratios.SLOWER} - {_SHOWN[f.expect]})
        side_ok = (
            r.value > 1.0 + judged.floor if f.expect == HIGHER else r.value < 1.0 - judged.floor
        )
        if judged.outcome == want:
            if in_band:
                return REPRODUCES, f"{here}; {_paper(f)}"
            return PARTLY, f"the direction, not the size: {here}; {_paper(f)}"
        if judged.outcome in opposite:
            return DOES_NOT, f"the opposite direction: {here}; {_paper(f)}"
        if judged.outcome == ratios.SAME:
            return DOES_NOT, f"no change shown: {here}; {_paper(f)}"
        if side_ok:
            return PARTLY, f"the direction, not shown beyond the noise: {here}; {_paper(f)}"
        wrong = r.value < 1.0 - judged.floor if f.expect == HIGHER else r.value > 1.0 + judged.floor
        if wrong:
            return DOES_NOT, f"the opposite direction, undecided: {here}; {_paper(f)}"
        return DOES_NOT, f"no change shown: {here}; {_paper(f)}"
    # the paper saw no change (within its band)
    if judged.outcome == ratios.SAME:
        return REPRODUCES, f"{here}; {_paper(f)}"
    if in_band:
        return PARTLY, f"within the paper's band, not shown equal: {here}; {_paper(f)}"
    return DOES_NOT, f"a change the paper did not see: {here}; {_paper(f)}"
