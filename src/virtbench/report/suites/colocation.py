"""Plug-in hook: registers the co-location section (report/colocation_section.py)."""

from .. import colocation_section  # noqa: F401 - imported for its registration
