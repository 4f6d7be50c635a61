"""Platform options, parsed once into a typed object per platform type.

A `[[platforms]]` entry's options are parsed by the campaign loader (which reports the first
problem with file and key) and carried by the PlatformSpec; a platform reads typed fields from
`Platform.opts`. `values` keeps the options as written, defaults filled in: the labels stored
with every sample and the words of messages ("512M", not 536870912).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar, Self, TypeVar

from ..errors import PlatformError
from ..parsing import ParseError

# option name -> (default, allowed values or None for free-form, help)
Schema = dict[str, tuple[Any, tuple[Any, ...] | None, str]]
T = TypeVar("T")


class OptionError(PlatformError):
    """A bad platform option: which key, its value, what is wrong, what is allowed."""

    def __init__(
        self, key: str, value: Any, problem: str, allowed: Any, where: str | None = None
    ) -> None:
        prefix = f"platform '{where}': " if where else ""
        super().__init__(f"{prefix}option {key} = {value!r} {problem}; allowed: {allowed}")
        self.key, self.value, self.problem, self.allowed = key, value, problem, allowed


class OptionReader:
    """Reads typed options from `values`, collecting every problem instead of stopping at the
    first (the hook `Platform.validate_options` lists them all)."""

    def __init__(self, values: dict[str, Any], where: str | None = None) -> None:
        self.values, self.where = values, where
        self.problems: list[OptionError] = []

    def get(
        self,
        key: str,
        parse: Callable[[Any], T],
        allowed: str | None = None,
        problem: str | None = None,
    ) -> T | None:
        """`parse(value)` of an option that is set, else None; a ParseError or OptionError
        becomes a problem (`allowed`, `problem`: the caller's words instead of the parser's)."""
        value = self.values.get(key)
        if value is None:
            return None
        try:
            return parse(value)
        except (ParseError, OptionError) as exc:
            self.problem(key, problem or exc.problem, allowed or exc.allowed)
            return None

    def problem(self, key: str, problem: str, allowed: Any) -> None:
        self.problems.append(OptionError(key, self.values.get(key), problem, allowed, self.where))

    def raise_first(self) -> None:
        if self.problems:
            raise self.problems[0]


@dataclass(frozen=True)
class PlatformOptions:
    """The options of a platform type without options of its own; subclasses add typed
    fields, declare their `schema` and read the fields in `read`."""

    values: dict[str, Any]  # as written, defaults filled in (labels, messages)
    schema: ClassVar[Schema] = {}

    @classmethod
    def read(cls, r: OptionReader) -> dict[str, Any]:
        """The typed fields (name -> value) from `r`; problems are collected in `r`."""
        return {}

    @classmethod
    def _reader(cls, options: dict[str, Any], where: str | None) -> OptionReader:
        r = OptionReader({k: v[0] for k, v in cls.schema.items()} | options, where)
        for key, (_default, choices, _help) in cls.schema.items():
            if choices is not None and r.values[key] not in choices:
                r.problem(key, "is not allowed", ", ".join(map(str, choices)))
        return r

    @classmethod
    def parse(cls, options: dict[str, Any], where: str | None = None) -> Self:
        """Options as set (the rest take their defaults); raise OptionError for the first bad
        one, naming the platform `where` if given."""
        r = cls._reader(options, where)
        fields = cls.read(r)
        r.raise_first()
        return cls(values=r.values, **fields)

    @classmethod
    def problems(cls, options: dict[str, Any], where: str | None = None) -> list[OptionError]:
        """Every bad option, for the loader's hook that lists them all."""
        r = cls._reader(options, where)
        cls.read(r)
        return r.problems
