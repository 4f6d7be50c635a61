"""The built-in report sections; each module registers its sections on import."""

from . import curves, invalid, results, run, scores, series  # noqa: F401
