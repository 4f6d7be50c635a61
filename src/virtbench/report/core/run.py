"""Sections: run facts with cell outcomes and errors (10), host and platform facts (20)."""

from __future__ import annotations

import json
import time
from collections import Counter
from typing import Any

from ... import labelkeys, netstack
from ...analysis import fingerprint, platform_facts
from .. import fmt
from ..data import ReportData
from ..html import Raw, Td, badge, details, h, kv_table, scroll, table
from ..sections import Section, register_section

STATUS_KIND = {"ok": "ok", "failed": "bad", "timeout": "bad", "pending": "warn", "running": "warn"}
MAX_ERROR = 3000  # characters of an error message shown in the HTML (the store keeps all)


def _when(ts: float | None) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(ts)) if ts else "–"


def _duration(a: float | None, b: float | None) -> str:
    if not a or not b:
        return "–"
    s = int(b - a)
    return (
        f"{s // 3600}h {s % 3600 // 60:02d}m {s % 60:02d}s"
        if s >= 3600
        else f"{s // 60}m {s % 60:02d}s"
    )


def _warmup(st: dict) -> str:
    """Uncounted runs, and what each serves (older stores have no scope: per scenario)."""
    n = st.get("warmup")
    if not n:
        return str(n)
    return f"{n} per " + ("platform" if st.get("warmup_scope") == "platform" else "scenario")


def _repetitions(st: dict) -> str:
    a = st.get("adaptive")
    if not a:
        return str(st.get("repetitions"))
    return (
        f"auto: ±{a['precision_pct']:g}% (95% CI), {a['min_repetitions']}..."
        f"{a['max_repetitions']}, budget {a['budget_s']:g} s per test case"
    )


def cell_counts(data: ReportData) -> Counter:
    return Counter(c.status for c in data.cells)


@register_section(10, "run")
def run_section(data: ReportData) -> Section:
    r, st = data.run, data.settings
    counts = cell_counts(data)
    status_badges = Raw(
        "".join(badge(f"{n} {s}", STATUS_KIND.get(s, "info")) for s, n in sorted(counts.items()))
    )
    facts = [
        ("run id", data.run_id),
        ("campaign", f"{r['name']} ({r.get('campaign_file') or 'built-in'})"),
        ("status", Raw(badge(r["status"], "ok" if r["status"] == "finished" else "bad"))),
        ("started / finished", f"{_when(r['started_at'])} / {_when(r.get('finished_at'))}"),
        ("duration", _duration(r["started_at"], r.get("finished_at"))),
        ("cells", status_badges),
        ("repetitions / warm-up", f"{_repetitions(st)} / {_warmup(st)}"),
        (
            "order / seed",
            f"{st.get('order')} / {r.get('seed') if r.get('seed') is not None else '–'}",
        ),
        ("baseline platform", st.get("baseline") or "none (no normalization)"),
        ("cell timeout", f"{st.get('cell_timeout')} s"),
        (
            "target / client CPUs",
            f"{st.get('target_cpus') or 'free'} / {st.get('client_cpus') or 'free'}",
        ),
        ("virtbench", r.get("virtbench_version") or "–"),
    ]
    # the facts folded under one line: the verdict comes next, the answer first
    line = (
        f"{r['name']} · {r['status']} · "
        + ", ".join(f"{n} {s}" for s, n in sorted(counts.items()))
        + f" · {_duration(r['started_at'], r.get('finished_at'))}"
    )
    body = details(line, kv_table(facts))
    # a cell not run yet says nothing but "later": a count per platform and scenario, while a
    # failed, timed-out or interrupted cell keeps its own row with its error
    bad = [c for c in data.cells if c.status not in ("ok", "pending")]
    pending = pending_cells(data)
    if bad:
        rows = [
            [
                c.seq,
                c.platform,
                c.test_case,
                c.scenario,
                c.repetition,
                Td(c.status, "bad"),
                Raw(f'<pre class="err">{h((c.error or "")[:MAX_ERROR])}</pre>') if c.error else "",
            ]
            for c in bad
        ]
        body += Raw("<h3>Cells that did not finish ok</h3>") + table(
            ["#", "platform", "test case", "scenario", "rep", "status", "error"], rows
        )
    n_pending = sum(len(seqs) for seqs in pending.values())
    if pending:
        plats = len({p for p, _t, _s in pending})
        scens = len({s for _p, _t, s in pending})
        line = (
            f"{n_pending} cells not run yet (pending), {plats} platform{'s' * (plats != 1)} × "
            f"{scens} scenario{'s' * (scens != 1)}"
        )
        body += Raw("<h3>Cells not run yet</h3>") + details(
            line,
            table(
                ["platform", "test case", "scenario", "cells", "#"],
                [
                    [p, t, s, Td(str(len(seqs)), "num"), fmt.int_ranges(seqs)]
                    for (p, t, s), seqs in pending.items()
                ],
            ),
        )
    warmups = failed_warmups(data)
    if warmups:
        body += Raw(
            "<h3>Warm-ups that failed</h3>"
            '<p class="note">These cells were measured anyway, on a target whose unmeasured'
            " warm-up failed (cell label <code>warmup.failed</code>).</p>"
        ) + table(
            ["platform", "test case", "cells", "warm-up error"],
            [
                [
                    p,
                    t,
                    fmt.int_ranges(seqs),
                    Raw(f'<pre class="err">{h(e[:MAX_ERROR])}</pre>'),
                ]
                for (p, t, e), seqs in warmups.items()
            ],
        )
    md = [
        f"# virtbench run {data.run_id}: campaign {r['name']} ({r['status']})",
        "cells: "
        + ", ".join(f"{n} {s}" for s, n in sorted(counts.items()))
        + (f"; baseline: {st['baseline']}" if st.get("baseline") else ""),
    ]
    if bad:
        md.append("")
        md.append("Cells that did not finish ok:")
        for c in bad:
            err = (c.error or "").strip().splitlines()
            md.append(
                f"- {c.platform} {c.test_case} {c.scenario} #{c.repetition}: {c.status}"
                + (f": {err[0][:200]}" if err else "")
            )
    if pending:
        md.append("")
        per_platform: Counter = Counter()
        for (p, _t, _s), seqs in pending.items():
            per_platform[p] += len(seqs)
        md.append(
            f"{n_pending} cells not run yet (pending): "
            + ", ".join(f"{p} {k}" for p, k in per_platform.items())
        )
    if warmups:
        md.append("")
        md.append("Warm-ups that failed (their cells were measured anyway):")
        for (p, t, e), seqs in warmups.items():
            first = e.strip().splitlines()[0][:200] if e.strip() else ""
            md.append(f"- {p} {t}, cells {fmt.int_ranges(seqs)}: {first}")
    return Section("Run", body, "\n".join(md))


def pending_cells(data: ReportData) -> dict[tuple[str, str, str], list[int]]:
    """(platform, test case, scenario) -> the cells not run yet, in campaign order."""
    out: dict[tuple[str, str, str], list[int]] = {}
    for c in data.cells:
        if c.status == "pending":
            out.setdefault((c.platform, c.test_case, c.scenario), []).append(c.seq)
    return out


def failed_warmups(data: ReportData) -> dict[tuple[str, str, str], list[int]]:
    """(platform, test case, warm-up error) -> the cells measured after that failed warm-up
    (runner/run.py labels them `warmup.failed`)."""
    out: dict[tuple[str, str, str], list[int]] = {}
    for c in data.cells:
        warmup = c.labels.get(labelkeys.WARMUP)
        if isinstance(warmup, dict) and warmup.get("failed"):
            out.setdefault((c.platform, c.test_case, str(warmup["failed"])), []).append(c.seq)
    return out


def _gib(n: int | None) -> str:
    return f"{n / 2**30:.1f} GiB" if n else "–"


def _platform_options(labels: dict[str, Any]) -> str:
    """A platform's labels for the Platforms table: options left unset are not shown (no
    "None"), an engine's configuration (a dict: platforms/engine_config.py) as key.sub=v."""
    parts = []
    for k, v in sorted(labels.items()):
        if k == "name" or v is None or v == "":
            continue
        if isinstance(v, dict):
            parts += [f"{k}.{sk}={sv}" for sk, sv in sorted(v.items()) if sv not in (None, "")]
        else:
            parts.append(f"{k}={fmt.label_value(v)}")
    return ", ".join(parts)


def tools_shown(data: ReportData) -> tuple[dict[str, str], bool]:
    """The tool versions the report lists: those of the tools the run's test cases and
    platforms ran (host facts `tools_used`, the platforms' runtimes), and whether it is
    every tool found instead (a run stored before `tools_used` was recorded)."""
    versions = data.host.get(fingerprint.TOOL_VERSIONS) or {}
    used = fingerprint.tools_of(data.host, {c.test_case for c in data.cells})
    if used is None:
        return dict(versions), True
    for spec in {c.platform_json or "{}" for c in data.cells}:
        used |= platform_facts.runtime_tools(data.host, json.loads(spec))
    return {t: v for t, v in versions.items() if t in used}, False


@register_section(85, "host")
def host_section(data: ReportData) -> Section:
    f = data.host
    cpus = f.get("cpus_allowed")
    facts = [
        ("CPU", f.get("cpu_model", "–")),
        (
            "cores",
            f"{f.get('cores', '–')}"
            # CPU numbers as ranges (0–1), never a Python list
            + (
                f" (allowed: {fmt.int_ranges(cpus) if isinstance(cpus, list) else cpus})"
                if cpus
                else ""
            ),
        ),
        ("memory", _gib(f.get("memory_bytes"))),
        ("kernel / OS", f"{f.get('kernel', '–')} / {f.get('os', '–')}"),
        ("this host runs on", f.get("virtualization", "–")),
        ("cgroup", f.get("cgroup", "–")),
        ("KVM flavour", f.get("kvm", "–")),
        (
            "governor / SMT / THP",
            f"{f.get('governor') or '–'} / {f.get('smt') or '–'} / {f.get('thp') or '–'}",
        ),
        ("hostname / python", f"{f.get('hostname', '–')} / {f.get('python', '–')}"),
    ]
    if net := f.get("net_stack"):  # runs stored since it was recorded
        text = ", ".join(f"{k} {v}" for k, v in net.items())
        if net.get("tcp_congestion_control") == "bbr":
            text += f" ({netstack.BBR_EFFECT})"
        facts.append(("TCP stack", text))
    if "hypervisor" in f:  # runs stored since issue 14: the machine beneath, with evidence
        ev = f.get("hypervisor_evidence") or {}
        show = lambda v: " ".join(v) if isinstance(v, list) else str(v)  # noqa: E731
        seen = ", ".join(f"{k}={show(v)}" for k, v in ev.items() if v not in (None, [], ""))
        facts.insert(5, ("hypervisor", f"{f['hypervisor']}" + (f" ({seen})" if seen else "")))
    if f.get("fleet_host"):
        facts.append(("fleet host (inventory name)", f["fleet_host"]))
    plats = data.platform_labels()
    prow = []
    for name in data.platforms:
        lab = dict(plats.get(name, {}))
        ptype = lab.pop(labelkeys.PLATFORM_TYPE, lab.pop(labelkeys.SPEC_TYPE, "–"))
        accel = lab.pop(labelkeys.ACCEL_USED, None) or lab.get(labelkeys.ACCEL) or "–"
        opts = _platform_options(lab)
        prow.append(
            [name + (" (baseline)" if name == data.baseline else ""), ptype, accel, opts or "–"]
        )
    versions, all_tools = tools_shown(data)
    body = kv_table(facts)
    body += Raw("<h3>Platforms</h3>") + scroll(
        table(["platform", "type", "accel used", "options"], prow)
    )
    if versions:
        # four tool/version pairs per row keep the long list short; a version is text
        # (class text: never right-aligned as a number, even 3.33)
        pairs = sorted(versions.items())
        rows = [
            [x for k, v in pairs[i : i + 4] for x in (Td(k, "name"), Td(v or "–", "text"))]
            for i in range(0, len(pairs), 4)
        ]
        which = (
            "every tool found on the host (this run did not record which tools it used)"
            if all_tools
            else "the tools this run's test cases and platforms ran"
        )
        body += Raw(f'<h3>Tool versions</h3><p class="note">{h(which)}</p>') + scroll(
            table(["tool", "version"] * min(4, len(pairs)), rows)
        )
    md = (
        f"host: {f.get('cpu_model', '?')}, {f.get('cores', '?')} cores, "
        f"{_gib(f.get('memory_bytes'))}, kernel {f.get('kernel', '?')}, "
        f"cgroup {f.get('cgroup', '?')}, kvm {f.get('kvm', '?')}, on {f.get('virtualization', '?')}"
    )
    # folded under its one-line summary: the host is context, the results come first
    body = details(md.removeprefix("host: ") + "; platforms, tool versions", body)
    return Section("Host", body, md)
