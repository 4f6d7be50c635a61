"""Report section of the conference suite (seed 002's macro benchmark, Figs. 2-3): the
environment's CPU, memory and network against connected users, one line per platform
(mean ± CI over repetitions), the viewers' frames delivered and added delay, and a table of
users served before saturation and the cost per user (slopes, CI over repetitions).
"""

from __future__ import annotations

from ...analysis import conference as conf
from ...analysis.stats import Summary, summarize
from .. import fmt, html, svg
from ..sections import Section, register_section

# (title, metric, role, y label)
CHARTS = (
    ("CPU by connected users (seed 002 Fig. 2)", "cpu_util", "target", "CPU % (host view)"),
    ("Memory by connected users (seed 002 Fig. 3)", "mem_mib", "target", "memory (MiB)"),
    ("Frames delivered to viewers", "delivery_ratio", "target", "received / sent"),
    ("Added viewer delay", "delay_max_ms", "target", "worst viewer (ms)"),
    ("Clients' CPU (all ffmpeg users)", "client_cpu_total_pct", "client", "% of one CPU"),
)
NET = (("server_out_kbps", "out"), ("server_in_kbps", "in"))
COST = (
    ("cpu_util", "target", "CPU %/user"),
    ("mem_mib", "target", "memory MiB/user"),
    ("server_out_kbps", "target", "out kbit/s per user"),
    ("client_cpu_total_pct", "client", "client CPU %/user"),
)


def _line(
    name: str,
    colour: str,
    by_users: dict[int, list[float]],
    dashed: bool = False,
    past: dict[int, list[float]] | None = None,
) -> svg.Line:
    """Mean ± CI per user count; steps past saturation (`past`) are marked points."""
    past = past or {}
    by_users = {**past, **by_users}
    pts = []
    for u in sorted(by_users):
        s = summarize(by_users[u])
        half = s.ci_half
        lo = None if half is None else s.mean - half  # type: ignore[operator]
        hi = None if half is None else s.mean + half  # type: ignore[operator]
        pts.append((float(u), s.mean, lo, hi))  # type: ignore[arg-type]
    marked = {float(u): "past the server's saturation" for u in past}
    return svg.Line(name, colour, pts, marked, dashed=dashed)  # type: ignore[arg-type]


def _mean_ci(s: Summary | None, unit: str = "") -> str:
    if s is None or not s.n:
        return "–"
    return fmt.mean_ci(s.mean, s.ci_half, unit) + f" (n={s.n})"


def charts(data, rows) -> list[str]:
    out = []
    for title, metric, role, y_label in CHARTS:
        curves, past = conf.curve(rows, metric, role), conf.curve(rows, metric, role, past=True)
        lines = [
            _line(p, data.colour(p), curves.get(p, {}), past=past.get(p))
            for p in data.platforms
            if curves.get(p) or past.get(p)
        ]
        if lines:
            out.append(svg.line_chart(title, lines, "connected users", y_label))
    net_lines = []
    for metric, word in NET:
        curves, past = conf.curve(rows, metric), conf.curve(rows, metric, past=True)
        for p in data.platforms:
            if curves.get(p) or past.get(p):
                name, colour = f"{p} {word}", data.colour(p)
                net_lines.append(_line(name, colour, curves.get(p, {}), word == "in", past.get(p)))
    if net_lines:
        out.append(
            svg.line_chart(
                "Network by connected users: out (solid), in (dashed)",
                net_lines,
                "connected users",
                "kbit/s",
            )
        )
    return out


def table(data, rows) -> tuple[str, str]:
    served = conf.users_served(rows)
    budgets = conf.budget_percent(data.platform_labels())
    costs = {metric: conf.per_user(rows, metric, role, budgets) for metric, role, _ in COST}
    reached = conf.budget_reached(rows, budgets)
    head = ["platform", "users served (before saturation)", "stopped", "at CPU budget from"]
    head += [label for _m, _r, label in COST]
    body, md = [], ["| platform | users served | CPU %/user |", "|---|---|---|"]
    for p in data.platforms:
        sv = served.get(p)
        if sv is None:
            continue
        users = _mean_ci(sv.summary)
        if sv.bounds:
            users += f"; {sv.bounds} reached max_users (a lower bound)"
        if sv.invalid:
            users += f"; {sv.invalid} invalid"
        stopped = "; ".join(sorted(set(sv.stopped)))
        cost = [_mean_ci(costs[m].get(p)) for m, _r, _l in COST]
        at_budget = ", ".join(f"{u} users" for u in reached.get(p, [])) or "–"
        body.append([p, users, stopped, at_budget, *cost])
        md.append(f"| {p} | {users} | {cost[0]} |")
    return str(html.table(head, body)), "\n".join(md)


@register_section(order=47, name="conference")
def conference(data) -> Section | None:
    rows = conf.rows_of(data.samples)
    if not rows:
        return None
    tbl, md = table(data, rows)
    intro = (
        "<p>Users join the media server (nginx-rtmp inside each platform) one at a time;"
        " each point is one user count, the mean over repetitions with its 95% CI. CPU and"
        " memory are the environment's as the host sees it (its cgroup, a VM's QEMU"
        " process); network is the server's RTMP bytes, counted at its clients' sockets."
        " Cost per user is the slope over each repetition's unsaturated steps that were not"
        " at the server's CPU budget (throttled by its CFS quota in more than 25% of periods:"
        " its CPU is then the budget's, not the users'); points past the server's saturation"
        " are marked."
        " A step whose clients were saturated is invalid and ends the run; users served is"
        " then no figure.</p>"
    )
    body = intro + tbl + "".join(charts(data, rows))
    return Section(
        "Conference: resources by connected users (seed 002)", html.Raw(body), markdown=md
    )
