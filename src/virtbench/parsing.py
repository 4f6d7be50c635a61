"""Values read from campaign files, platform options and scenario strings: integers and
numbers within bounds, CPU lists, sizes, durations, `key=value` options.

Each helper raises ParseError saying what is wrong and what is allowed; the caller puts that in
its own words with where the value came from (file and key, option, scenario).
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Sequence
from typing import Any

NOT_INTEGER = "is not an integer"
NOT_NUMBER = "is not a number"
OUT_OF_RANGE = "is out of range"
NOT_CPU_LIST = "is not a CPU list"
NOT_HOST_CPU = "is not a CPU of this host"
CPU_LIST_FORMS = "[0, 1] or '0-1,3'"
SIZE_FORMS = "bytes > 0 or '512M', '2G', '1.5GiB'"
MAX_SIZE = 1 << 60
DURATION_FORMS = "e.g. 1ms, 30ms, 750us (units: ns, us, ms, s)"

_CPU_RANGES = re.compile(r"\d+(-\d+)?(,\d+(-\d+)?)*")
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([KMGT]?)i?B?\s*$", re.IGNORECASE)
_SIZE_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
_DURATION = re.compile(r"^(?P<num>\d+(?:\.\d+)?)(?P<unit>ns|us|ms|s)$")
DURATION_NS = {"ns": 1, "us": 1_000, "ms": 1_000_000, "s": 1_000_000_000}


# what must not reach a terminal raw: C0/C1 controls (NUL, ESC), format characters (bidi
# overrides, zero-width), line and paragraph separators
_CONTROL_CATEGORIES = {"Cc", "Cf", "Zl", "Zp"}


def control_char(text: str, allow: str = "") -> str | None:
    """The first control character in `text` (other than those in `allow`), else None."""
    for c in text:
        if c not in allow and unicodedata.category(c) in _CONTROL_CATEGORIES:
            return c
    return None


def printable(text: str, allow: str = "") -> str:
    """`text` with its control characters (but those in `allow`, e.g. a report's newlines)
    escaped (\\x00, \\u202e): safe on a terminal."""
    if control_char(text, allow) is None:
        return text
    return "".join(repr(c)[1:-1] if control_char(c, allow) else c for c in text)


class ParseError(ValueError):
    """`value` is not acceptable: `problem` says why, `allowed` what would be."""

    def __init__(self, value: Any, problem: str, allowed: str) -> None:
        super().__init__(f"{value!r} {problem}; allowed: {allowed}")
        self.value, self.problem, self.allowed = value, problem, allowed


def is_int(value: Any) -> bool:
    """An int that is not a bool (TOML's true/false must not pass as 1/0)."""
    return isinstance(value, int) and not isinstance(value, bool)


def integer(value: Any, lo: int | None = None, hi: int | None = None, *, text: bool = False) -> int:
    """An int within lo..hi (either bound may be open); with `text`, also its decimal string
    (scenario arguments are strings)."""
    allowed = f"{'' if lo is None else lo}..{'' if hi is None else hi}"
    if text and isinstance(value, str):
        try:
            value = int(value)
        except ValueError:
            raise ParseError(value, NOT_INTEGER, allowed) from None
    if not is_int(value):
        raise ParseError(value, NOT_INTEGER, allowed)
    if (lo is not None and value < lo) or (hi is not None and value > hi):
        raise ParseError(value, OUT_OF_RANGE, allowed)
    return value


def number(
    value: Any, lo: float = -math.inf, hi: float = math.inf, *, above: bool = False
) -> float:
    """A finite float from a number or its text, within lo..hi (`above`: strictly above lo)."""
    allowed = f"{'> ' if above else ''}{lo}..{hi}"
    try:
        out = float(value) if isinstance(value, str) or is_int(value) else value
    except ValueError:
        raise ParseError(value, NOT_NUMBER, allowed) from None
    if not isinstance(out, float):
        raise ParseError(value, NOT_NUMBER, allowed)
    if not math.isfinite(out) or out < lo or out > hi or (above and out == lo):
        raise ParseError(out, OUT_OF_RANGE, allowed)
    return out


def cpu_list(value: Any, available: Sequence[int] | None = None) -> list[int]:
    """CPU numbers, in the order given, from a list [0, 1] or a string '0-1,3'. With
    `available`, each must be one of those: the error's value is the first that is not."""
    if isinstance(value, str) and _CPU_RANGES.fullmatch(value.strip()):
        cpus: list[Any] = []
        for part in value.strip().split(","):
            first, _, last = part.partition("-")
            cpus.extend(range(int(first), int(last or first) + 1))
    elif isinstance(value, list) and value:
        cpus = list(value)
    else:
        raise ParseError(value, NOT_CPU_LIST, CPU_LIST_FORMS)
    for cpu in cpus:
        if available is not None and (not is_int(cpu) or cpu not in available):
            raise ParseError(cpu, NOT_HOST_CPU, ", ".join(map(str, available)))
        if not is_int(cpu) or cpu < 0:
            raise ParseError(value, NOT_CPU_LIST, CPU_LIST_FORMS)
    return cpus


def size_bytes(value: Any) -> int:
    """Bytes (at most MAX_SIZE) from an int or a string like '512M', '2G', '1.5GiB'."""
    if is_int(value) and value > 0:
        size = value
    else:
        m = _SIZE.match(value) if isinstance(value, str) else None
        scaled = float(m.group(1)) * _SIZE_UNITS[m.group(2).upper()] if m else 0.0
        if scaled < 1:  # not a size, or less than a byte ('0.0001')
            raise ParseError(value, "is not a size", SIZE_FORMS)
        size = int(scaled) if scaled <= MAX_SIZE else MAX_SIZE + 1  # 400 digits: inf
    if size > MAX_SIZE:  # the kernel's limits overflow before; nothing has that much
        raise ParseError(value, "is too large", f"{SIZE_FORMS}, at most 1 EiB")
    return size


def duration_ns(text: str) -> int:
    """'1ms', '30ms', '750us', '3000000ns', '0.5s' -> nanoseconds (> 0)."""
    m = _DURATION.match(text.strip())
    ns = int(float(m["num"]) * DURATION_NS[m["unit"]]) if m else 0
    if ns <= 0:
        raise ParseError(text, "is not a positive duration", DURATION_FORMS)
    return ns


def key_values(
    args: Sequence[str], allowed: Sequence[str] | None = None, *, options_last: bool = False
) -> tuple[list[str], dict[str, str]]:
    """Positional arguments and `key=value` options of a scenario string. Each key may appear
    once and, given `allowed`, must be one of them; `options_last` refuses a positional
    argument after an option."""
    pos: list[str] = []
    opts: dict[str, str] = {}
    for arg in args:
        if "=" not in arg:
            if opts and options_last:
                raise ParseError(arg, "comes after options", "positional arguments first")
            pos.append(arg)
            continue
        key, _, value = arg.partition("=")
        if allowed is not None and key not in allowed:
            raise ParseError(key, "is not an option", ", ".join(allowed) or "none")
        if key in opts:
            raise ParseError(key, "is given twice", "each option once")
        opts[key] = value
    return pos, opts
