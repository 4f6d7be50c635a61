"""Plug-in hook: registers the web and network sections (report/web_section.py)."""

from .. import web_section  # noqa: F401 - imported for its registration
