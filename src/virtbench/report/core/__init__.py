"""The built-in report sections; each module registers its sections on import."""

from . import curves, invalid, results, run, scores, series, stops, verdict  # noqa: F401
