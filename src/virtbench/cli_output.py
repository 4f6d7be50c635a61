"""How the CLI prints: one `--format` family, rows in every format, pipe-safe output,
and what -q/-v mean.

Every command that prints results takes `--format` from FORMATS (the ones that apply to
it); `table` is kept as an alias of `md` where it existed. Results go to stdout through
`emit`/`Rows`; chatter (progress, notes) goes through the CLI's status console, which
`--quiet` silences. docs/export.md says what each format holds.
"""

from __future__ import annotations

import csv
import io
import json
import os
import shlex
import sys
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import click
from rich.console import Console
from rich.table import Table
from rich.text import Text

from .parsing import printable

FORMATS = ("md", "json", "jsonl", "csv", "tsv")
ALIASES = {"table": "md"}  # the old `list`/`fleet show` value

# results printed on a terminal as a boxed table (rich); never silenced by --quiet
out_console = Console(soft_wrap=True, emoji=False)


class FormatChoice(click.Choice):
    """A --format value of FORMATS (those given), accepting the old aliases."""

    def __init__(self, allowed: Sequence[str]) -> None:
        super().__init__(list(allowed))

    def convert(self, value: Any, param: Any, ctx: Any) -> Any:
        return super().convert(ALIASES.get(value, value), param, ctx)


def format_option(
    allowed: Sequence[str] = FORMATS, default: str | None = None, help: str = ""
) -> Callable:
    """`--format` with `allowed` values; no default: the command picks one by whether stdout
    is a terminal."""
    said = help or (
        "default: a table on a terminal, tsv (one whole line per row) otherwise"
        if default is None
        else ""
    )
    aliases = [a for a, real in ALIASES.items() if real in allowed]
    if aliases:
        said = (said + "; " if said else "") + ", ".join(f"{a} = {ALIASES[a]}" for a in aliases)
    return click.option(
        "--format",
        "fmt",
        type=FormatChoice(allowed),
        default=default,
        show_default=default is not None,
        help=said or None,
    )


def emit(text: str) -> None:
    """Results text to stdout as it is (no markup, no wrapping), its newlines and tabs kept
    and every other control character escaped: names from an imported store may hold ESC."""
    text = printable(text, allow="\n\t")
    sys.stdout.write(text if text.endswith("\n") or not text else text + "\n")
    sys.stdout.flush()  # a reader that went away is found here, inside the command


def cell_text(value: Any) -> str:
    """A value as a user reads it: no Python repr (None, True, -0.0) in any output."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        if value == 0:
            return "0"  # -0.0 included
        return f"{value:.6g}"
    if isinstance(value, dict | list):
        return json.dumps(value, sort_keys=True, default=str)
    return str(value)


def _json_value(value: Any) -> Any:
    if isinstance(value, float) and value == 0:
        return 0.0  # never -0.0
    return value


class Rows:
    """Columns and rows of a listing, printed in any of FORMATS, or as a boxed table on a
    terminal when no format is asked for."""

    def __init__(self, columns: Iterable[str] = ()) -> None:
        self.columns: list[str] = list(columns)
        self.rows: list[list[Any]] = []

    def add_column(self, name: str) -> None:
        self.columns.append(name)

    def add_row(self, *cells: Any) -> None:
        self.rows.append(list(cells))

    def dicts(self) -> list[dict[str, Any]]:
        return [
            {c: _json_value(v) for c, v in zip(self.columns, r, strict=True)} for r in self.rows
        ]

    def render(self, fmt: str) -> str:
        """The rows as text in `fmt` (one of FORMATS)."""
        if fmt == "json":
            return json.dumps(self.dicts(), indent=1, default=str) + "\n"
        if fmt == "jsonl":
            return "".join(json.dumps(d, default=str) + "\n" for d in self.dicts())
        text_rows = [[cell_text(v) for v in r] for r in self.rows]
        if fmt == "csv":
            buf = io.StringIO()
            writer = csv.writer(buf, lineterminator="\n")
            writer.writerows([self.columns, *text_rows])
            return buf.getvalue()
        if fmt == "tsv":
            return "".join(
                "\t".join(tsv_field(c) for c in line) + "\n" for line in [self.columns, *text_rows]
            )
        if fmt == "md":
            return markdown_table(self.columns, text_rows)
        raise ValueError(f"unknown format {fmt}")

    def print(self, fmt: str | None) -> None:
        """`fmt` None: a boxed table on a terminal, tsv otherwise (whole lines for pipes)."""
        if fmt is None and sys.stdout.isatty():
            table = Table(show_header=True, header_style="bold")
            for c in self.columns:
                table.add_column(c)
            for r in self.rows:  # literally: usages like `[:cpu=N]` are not rich markup
                table.add_row(*(Text(cell_text(v)) for v in r))
            out_console.print(table)
            return
        emit(self.render(fmt or "tsv"))


def flatten(record: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested dicts as prefixed columns ({"a": {"n": 3}} -> a_n) for the table formats;
    lists stay one cell (JSON text)."""
    out: dict[str, Any] = {}
    for key, value in record.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict) and value:
            out.update(flatten(value, name + "_"))
        else:
            out[name] = value
    return out


def records_rows(records: Sequence[dict[str, Any]]) -> Rows:
    """Flat rows of records; the columns are every key, in first-seen order."""
    flat = [flatten(r) for r in records]
    columns: dict[str, None] = {}
    for r in flat:
        columns.update(dict.fromkeys(r))
    rows = Rows(columns)
    for r in flat:
        rows.add_row(*(r.get(c) for c in columns))
    return rows


def tsv_field(text: str) -> str:
    return text.replace("\t", " ").replace("\n", " ")


def markdown_table(columns: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    def line(cells: Sequence[str]) -> str:
        return "| " + " | ".join(c.replace("|", "\\|").replace("\n", " ") for c in cells) + " |"

    return "\n".join([line(columns), line(["---"] * len(columns)), *map(line, rows)]) + "\n"


# --- a reader that goes away (`virtbench doctor | head -1`) -------------------------------
def stdout_gone() -> None:
    """The reader of stdout closed it: stop quietly, as `cat` and `grep` do under a shell
    that ignores SIGPIPE's status. Later writes (the interpreter's last flush) go to
    /dev/null, so no second error is printed."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
    sys.exit(0)


# --- -v: the commands virtbench runs --------------------------------------------------------
_trace_write: Callable[[str], None] | None = None
_hooked = False


def trace_commands(write: Callable[[str], None] | None) -> None:
    """Print every command this process starts, as `+ argv` lines (a shell's `set -x`),
    through `write` (stderr); None stops it. An audit hook sees every subprocess, whichever
    module starts it, so no call site needs to remember to log."""
    global _trace_write, _hooked
    _trace_write = write
    if write is None or _hooked:
        return
    _hooked = True  # an audit hook cannot be removed: installed once, it checks _trace_write

    def hook(event: str, args: tuple) -> None:
        if event != "subprocess.Popen" or _trace_write is None:
            return
        argv = args[1]
        if isinstance(argv, str | bytes):
            text = os.fsdecode(argv)
        else:
            text = shlex.join(os.fsdecode(a) for a in argv)
        _trace_write(f"+ {text}")

    sys.addaudithook(hook)
