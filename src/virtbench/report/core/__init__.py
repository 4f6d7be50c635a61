"""The built-in report sections; each module registers its sections on import
(`report.sections.discover` imports them all)."""
