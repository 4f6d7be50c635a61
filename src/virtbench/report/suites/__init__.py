"""Report sections contributed by suites: every module here is imported by the report.

See `virtbench.report.sections` for how to write one.
"""
