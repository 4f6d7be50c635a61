"""VbTrade's SQL keeps every request's work bounded (docs/application.md, issue 15): HSQLDB
reads every row a WHERE matches before it applies ORDER BY ... LIMIT unless the ORDER BY names
an index's leading columns (the WHERE's equality columns first, one direction), and takes a
fair lock per row it reads. A query that breaks the rule scans a table that grows through a
run: a fifth of requests took 40-150 ms and throughput fell interval after interval."""

from __future__ import annotations

import re
from importlib import resources

import pytest

SOURCE = (resources.files("virtbench") / "appstack" / "VbTrade.java").read_text()
_LITERALS = r'((?:"(?:[^"\\]|\\.)*"\s*\+?\s*)+)'


def sql_strings(java: str, call: str) -> list[str]:
    """The SQL of each `call("..." + "...")` in the Java source, its literals joined."""
    out = []
    for m in re.finditer(rf"{call}\(\s*{_LITERALS}\)", java):
        out.append("".join(re.findall(r'"((?:[^"\\]|\\.)*)"', m.group(1))))
    return out


def indexes(java: str) -> dict[str, list[list[str]]]:
    """Table -> the column lists of its indexes (CREATE INDEX and each PRIMARY KEY)."""
    out: dict[str, list[list[str]]] = {}
    for sql in sql_strings(java, r"s\.execute"):
        if m := re.match(r"CREATE INDEX \w+ ON (\w+) \(([^)]*)\)", sql):
            cols = [c.split()[0].lower() for c in m.group(2).split(",")]
            out.setdefault(m.group(1).lower(), []).append(cols)
        elif m := re.match(r"CREATE TABLE (\w+) \((\w+) [^,]*PRIMARY KEY", sql):
            out.setdefault(m.group(1).lower(), []).append([m.group(2).lower()])
    return out


def unbounded(sql: str, idx: dict[str, list[list[str]]]) -> str | None:
    """Why an ORDER BY ... LIMIT query reads more rows than it returns, or None."""
    m = re.search(r"FROM (\w+)(?: \w+)?(?: WHERE (.*?))? ORDER BY (.*?) LIMIT", sql)
    if not m:
        return None
    table, where, order = m.group(1).lower(), m.group(2) or "", m.group(3)
    terms = [t.split() for t in order.split(",")]
    cols = [t[0].lower() for t in terms]
    dirs = {t[1].upper() if len(t) > 1 else "ASC" for t in terms}
    eq = [c.lower() for c in re.findall(r"(\w+) = \?", where)]
    if len(dirs) > 1:
        return f"mixed directions in ORDER BY {order}"
    if cols[: len(eq)] != eq:
        return f"ORDER BY {order} does not start with the WHERE's columns {eq}"
    if not any(ix[: len(cols)] == cols for ix in idx.get(table, [])):
        return f"no index on {table} starts with ({', '.join(cols)})"
    return None


def test_every_order_by_limit_reads_only_what_it_returns():
    idx = indexes(SOURCE)
    assert idx["orders"] and idx["quote"], idx  # the parser found the schema
    queries = [q for q in sql_strings(SOURCE, "prepareStatement") if " LIMIT " in q]
    assert len(queries) >= 4, queries  # market summary, last orders, sell, archive
    assert {q: unbounded(q, idx) for q in queries} == dict.fromkeys(queries)


@pytest.mark.parametrize(
    ("sql", "why"),
    [
        # the queries before issue 15's fix: each read every row of a growing set
        ("SELECT symbol FROM quote ORDER BY change DESC LIMIT 5", "no index on quote"),
        ("SELECT id FROM orders WHERE account_id = ? ORDER BY id DESC LIMIT 5", "does not start"),
        ("SELECT id FROM holding WHERE account_id = ? ORDER BY id LIMIT 1", "does not start"),
        (
            "SELECT id FROM orders WHERE account_id = ? ORDER BY account_id, id DESC LIMIT 5",
            "mixed directions",
        ),
    ],
)
def test_the_rule_catches_unbounded_queries(sql, why):
    idx = {"quote": [["symbol"]], "orders": [["id"], ["account_id"]], "holding": [["id"]]}
    assert why in (unbounded(sql, idx) or "")


def test_the_rule_accepts_an_index_prefix():
    idx = {"orders": [["account_id", "id"]]}
    sql = "SELECT id FROM orders WHERE account_id = ? ORDER BY account_id DESC, id DESC LIMIT 5"
    assert unbounded(sql, idx) is None


def test_buys_and_sells_are_equally_frequent():
    """As in DayTrader's mix: else the holding table (read by portfolio) grows through a run."""
    names = re.search(r"ACTIONS = \{([^}]*)\}", SOURCE).group(1).replace('"', "").split(", ")
    weights = [int(w) for w in re.search(r"WEIGHTS = \{([^}]*)\}", SOURCE).group(1).split(",")]
    mix = dict(zip(names, weights, strict=True))
    assert sum(weights) == 100
    assert mix["buy"] == mix["sell"] > 0
