"""The built-in report sections; each module registers its sections on import."""

from . import curves, disturbance, invalid, results, run, scores, series, stops, verdict  # noqa: F401
