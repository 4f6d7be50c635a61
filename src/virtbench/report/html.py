"""HTML and Markdown building blocks: escaped tables, badges and the page shell.

Everything user- or tool-provided goes through `escape` (platform names, error messages);
pass `Raw` for markup you built yourself. The page has inline CSS and no external resource.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from html import escape as _html_escape

from ..parsing import printable


def escape(text: str) -> str:
    """HTML-escaped, control characters too (ESC, BEL from a store's names: shown as \\x1b)."""
    return _html_escape(printable(str(text), allow="\n\t"))


class Raw(str):
    """Markup that is already safe HTML (not escaped again)."""


@dataclass
class Td:
    content: str | Raw
    cls: str = ""
    title: str = ""


CellLike = str | Raw | Td | int | float | None


def h(value: object) -> str:
    return value if isinstance(value, Raw) else escape(str(value))


# a cell holding only a number (a sign, thousands separators, a unit-less % or × ratio):
# right-aligned wherever a table comes from, so digits line up (a version such as 1.2.3 is
# not a number)
_N = r"[-+\u2212×]?\d[\d,]*(\.\d+)?"
# ... or a figure as the tables print one: "3,701 ± 12.5 req/s (n=3, 1 invalid)"
_COUNT = r" \(n=\d+[^()]*\)"  # "(n=3, 1 invalid)"
NUMBER = re.compile(rf"{_N}( ± {_N})?(\s?%| [^\s\d(]{{1,12}})?({_COUNT})?|–{_COUNT}")
# text this long gets a column of readable width (CSS td.long) rather than the few
# characters a line an auto-sized table leaves it beside wide numeric columns: the table
# then scrolls in its box instead
LONG_TEXT = 24


def _cell(tag: str, c: CellLike, auto: bool = True) -> str:
    """`auto`: class a plain cell by its text (number, long text) and a long header (so
    that it keeps a width it reads at)."""
    if not isinstance(c, Td):
        text = "" if c is None else c if isinstance(c, str) else str(c)
        plain = auto and not isinstance(c, Raw)
        number = plain and tag == "td" and NUMBER.fullmatch(text.strip())
        long = plain and not number and len(text) >= LONG_TEXT - 4 * (tag == "th") and " " in text
        c = Td(text, "num" if number else "long" if long else "")
    attrs = (f' class="{c.cls}"' if c.cls else "") + (
        f' title="{escape(c.title)}"' if c.title else ""
    )
    return f"<{tag}{attrs}>{h(c.content)}</{tag}>"


def table(headers: Sequence[CellLike], rows: Sequence[Sequence[CellLike]], cls: str = "") -> Raw:
    head = "".join(_cell("th", x) for x in headers)
    body = "".join("<tr>" + "".join(_cell("td", x) for x in r) + "</tr>" for r in rows)
    c = f' class="{cls}"' if cls else ""
    return Raw(f"<table{c}><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>")


def together(*parts: str) -> Raw:
    """Text that may wrap only between `parts`, each kept on one line: a test name
    (`sysbench-memory-sweep`, which a browser would break at its hyphens) before its
    dimensions, a value ± its CI before its unit. Narrow windows then wrap a cell instead of
    widening the table past the page."""
    return Raw(" ".join(f'<span class="nw">{h(p)}</span>' for p in parts if p))


def breakable(text: str) -> Raw:
    """An identifier that may wrap after its underscores (bandwidth_mib_s), which browsers
    never break at: a narrow window wraps it instead of widening its table."""
    return Raw(escape(text).replace("_", "_<wbr>"))


def scroll(inner: str) -> Raw:
    """Wide tables scroll sideways instead of overflowing the page."""
    return Raw(f'<div class="scroll">{inner}</div>')


def kv_table(pairs: Sequence[tuple[str, CellLike]]) -> Raw:
    # one value a row, read as a sentence: left-aligned whatever it holds
    body = "".join(f"<tr><th>{h(k)}</th>{_cell('td', v, auto=False)}</tr>" for k, v in pairs)
    return Raw(f'<table class="kv"><tbody>{body}</tbody></table>')


def badge(text: str, kind: str = "warn", title: str = "") -> Raw:
    t = f' title="{escape(title)}"' if title else ""
    return Raw(f'<span class="badge {kind}"{t}>{escape(text)}</span>')


def details(summary: str, body: str) -> Raw:
    return Raw(f"<details><summary>{h(summary)}</summary>{body}</details>")


def md_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    def clean(s: object) -> str:
        return str(s).replace("|", "\\|").replace("\n", " ")

    lines = ["| " + " | ".join(clean(x) for x in headers) + " |"]
    lines.append("|" + "---|" * len(headers))
    lines += ["| " + " | ".join(clean(x) for x in r) + " |" for r in rows]
    return "\n".join(lines)


CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;color:#1d1d1f;margin:0;
 background:#fafafa}
main{max-width:1400px;margin:0 auto;padding:12px 24px 48px}
h1{font-size:22px;margin:16px 0 4px;overflow-wrap:anywhere}h2{font-size:18px;margin:28px 0 8px;
 border-bottom:2px solid #0072B2;padding-bottom:3px}h3{font-size:15px;margin:18px 0 6px}
nav{background:#fff;border:1px solid #ddd;padding:6px 12px;margin:8px 0;font-size:13px;
 display:flex;flex-wrap:wrap}
nav a{margin-right:12px;color:#0057a0;text-decoration:none;white-space:nowrap}
p,li,.note,pre.err{overflow-wrap:anywhere}
table{border-collapse:collapse;margin:6px 0 12px;background:#fff;font-size:13px}
th,td{border:1px solid #d8d8d8;padding:3px 5px;text-align:left;vertical-align:top}
thead th{background:#eef3f8;position:sticky;top:0;font-weight:600}
td.num,th.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
td.num.wrap{white-space:normal}.nw{white-space:nowrap}
td.why{min-width:14em}td.long{min-width:12em}th.long{min-width:7em}
table.kv th{background:#f4f4f4;font-weight:600;white-space:nowrap}
table.kv td{overflow-wrap:anywhere}
td.name{white-space:nowrap}small{color:#555}
td.noisy{background:#fff4ce}td.bad,tr.bad td{background:#fde2e1}td.good{color:#05660f}
td.worse{color:#a40000}td.base{color:#666}
.badge{display:inline-block;border-radius:3px;padding:0 5px;margin-left:4px;font-size:11px;
 font-weight:600;white-space:nowrap}
.badge.warn{background:#ffe08a;color:#5a4300}.badge.bad{background:#d93025;color:#fff}
.badge.ok{background:#cdebd3;color:#0b4d1a}.badge.good{background:#cdebd3;color:#0b4d1a}.badge.same{background:#e8e8e8;color:#333}.badge.info{background:#e3ebf5;color:#24466b}
pre.err{white-space:pre-wrap;background:#fff5f5;border:1px solid #f2c6c6;padding:6px;
 margin:2px 0;font-size:12px;max-height:14em;overflow:auto}
.note{color:#555;font-size:12.5px}.charts{display:flex;flex-wrap:wrap;gap:8px}
svg.chart{background:#fff;border:1px solid #ddd;max-width:100%;height:auto}
.scroll{overflow-x:auto;max-width:100%}
details{margin:6px 0}summary{cursor:pointer;color:#0057a0}
.section-error{border:1px solid #d93025;background:#fde2e1;padding:6px;overflow-x:auto}
"""


def page(title: str, nav: Sequence[tuple[str, str]], body: str, subtitle: str = "") -> str:
    links = "".join(f'<a href="#{escape(a)}">{escape(t)}</a>' for a, t in nav)
    sub = f'<div class="note">{escape(subtitle)}</div>' if subtitle else ""
    return (
        "<!DOCTYPE html>\n"
        f'<html lang="en"><head><meta charset="utf-8"><title>{escape(title)}</title>'
        f'<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<style>{CSS}</style></head><body><main><h1>{escape(title)}</h1>{sub}"
        f"<nav>{links}</nav>{body}</main></body></html>\n"
    )
