"""User-facing errors: the CLI prints these as one clear message, never a traceback."""

from __future__ import annotations

from collections.abc import Iterable

from .parsing import printable


class VirtbenchError(Exception):
    """An error caused by input or host state that the user can fix."""

    exit_code = 2


class CampaignError(VirtbenchError):
    """A campaign file is malformed: names the file, the key, the bad value and what is allowed."""

    def __init__(
        self,
        file: str,
        key: str,
        problem: str,
        value: object = None,
        allowed: Iterable[object] | None = None,
    ) -> None:
        # file, key, problem and allowed may hold user text: escaped, so a NUL or ESC in a
        # campaign never reaches the terminal raw (repr escapes the value)
        parts = [f"{printable(file)}: key '{printable(key)}': {printable(problem)}"]
        if value is not None:
            shown = repr(value)  # a value can be most of a 1 MiB file
            parts.append("got " + (shown if len(shown) <= 200 else shown[:200] + "..."))
        if allowed is not None:
            parts.append("allowed: " + ", ".join(printable(str(a)) for a in allowed))
        super().__init__("; ".join(parts))
        self.file, self.key, self.value = file, key, value


class MissingToolError(VirtbenchError):
    def __init__(self, tool: str, package: str, needed_by: str = "") -> None:
        who = f" (needed by {needed_by})" if needed_by else ""
        super().__init__(
            f"tool '{tool}' is not installed{who}; install the Debian package: "
            f"apt-get install {package}   (or run: virtbench setup)"
        )
        self.tool, self.package = tool, package


class NeedsRootError(VirtbenchError):
    def __init__(self, what: str) -> None:
        super().__init__(f"{what} needs root privileges; run virtbench as root (sudo)")


class PlatformError(VirtbenchError):
    """A platform could not be provisioned or used."""


class WorkloadError(Exception):
    """A tool run failed or its output could not be parsed (fails the cell, not the run).

    `samples` carries what was measured before the failure (e.g. the steps of a rate sweep
    before the server died); the runner stores them with the failed cell instead of losing them.
    """

    def __init__(self, *args: object, samples: list | None = None) -> None:
        super().__init__(*args)
        self.samples: list = list(samples or [])


class WorkloadTimeout(WorkloadError):
    """A command overran the time limit virtbench gave it (the cell timeout, or a step's own)
    and was killed: the cell's status is "timeout". Only this type says so, never the error's
    words: a tool's own "connection timed out" is a failure like any other."""
