#!/usr/bin/env python3
"""Write a copy of a campaign that runs one platform's cells only (issue 12).

    python bench/one_platform.py colocation-web crun-in-hvm -o /work/runs/cw-crun-in-hvm.toml
    flock /tmp/vb-measure.lock python bench/campaign_runtime.py /work/runs/cw-crun-in-hvm.toml \
        --results-dir /work/runs/cw-crun-in-hvm

The other platforms that the chosen one needs (its host, the scenarios' neighbours) stay,
with `suites = []`: they are provisioned as hosts and neighbours and measured as solo peaks,
but run no cells of their own. The rest are dropped. A campaign too long for one sitting is
measured in such pieces when its results directory cannot outlive the sitting; a platform's
piece too long for one is cut further with `--scenarios solo,identical` (each part warms its
platform once and measures the solo peaks its scenarios use, so two parts repeat that much).
Reads and writes text only, so the copy keeps every comment of the original; the campaign
loader checks the copy before it is written.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

from virtbench.campaign import loader, source
from virtbench.errors import VirtbenchError

TABLE = "[[platforms]]\n"
NAME = re.compile(r'^name\s*=\s*"([^"]+)"\s*$', re.MULTILINE)
SCENARIOS = re.compile(r"^scenarios\s*=\s*\[(.*?)^\]", re.MULTILINE | re.DOTALL)
QUOTED = re.compile(r'"([^"]+)"')


def needed(campaign_ref: str, platform: str, scenarios: set[str] | None = None) -> set[str]:
    """The platforms `platform`'s cells use: itself, its hosts, the neighbours of the
    campaign's scenarios (of `scenarios` only, when given)."""
    campaign = loader.load(campaign_ref)
    specs = {p.name: p for p in campaign.platforms}
    if platform not in specs:
        raise VirtbenchError(
            f"{campaign.file}: no platform '{platform}'; allowed: {', '.join(specs)}"
        )
    keep, spec = {platform}, specs[platform].host
    while spec is not None:
        keep.add(spec.name)
        spec = spec.host
    chosen = [s for s in campaign.scenarios if scenarios is None or s.text() in scenarios]
    return keep | {ref for s in chosen for ref in s.platform_refs()}


def some_scenarios(text: str, scenarios: set[str], where: str) -> str:
    """`text` with only `scenarios` left in its multi-line `scenarios = [...]` list (one
    entry per line, as shipped), their comments kept."""
    found = SCENARIOS.search(text)
    listed = QUOTED.findall(found.group(1)) if found else []
    unknown = sorted(scenarios - set(listed))
    if not found or unknown or not scenarios:
        raise VirtbenchError(
            f"{where}: scenarios: no {', '.join(unknown) or 'choice'}; "
            f"allowed: {', '.join(listed) or '(a multi-line scenarios list)'}"
        )
    lines = found.group(1).split("\n")
    kept = [ln for ln in lines if (m := QUOTED.search(ln)) is None or m.group(1) in scenarios]
    return text[: found.start(1)] + "\n".join(kept) + text[found.end(1) :]


def one_platform(text: str, platform: str, keep: set[str]) -> str:
    """`text` with `platform` the only one running cells. Expects each platform table to
    start with `[[platforms]]` and name itself on a `name = "..."` line, as shipped."""
    head, *tables = text.split(TABLE)
    rest = tables[-1].split("\n[", 1) if tables else []  # what follows the last table
    if len(rest) == 2:
        tables[-1], tail = rest[0] + "\n", "[" + rest[1]
    else:
        tail = ""
    out = [re.sub(r"^baseline\s*=.*\n", "", head, flags=re.MULTILINE)]
    for table in tables:
        found = NAME.search(table)
        name = found.group(1) if found else None
        if name not in keep:
            continue
        if name != platform:
            table = table[: found.end()] + "\nsuites = []" + table[found.end() :]  # type: ignore[union-attr]
        out.append(TABLE + table)
    return "".join(out) + tail


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("campaign", help="a built-in campaign name or a .toml file")
    ap.add_argument("platform", help="the platform whose cells the copy runs")
    ap.add_argument("-o", "--output", type=Path, required=True, help="the copy's path")
    ap.add_argument(
        "--scenarios", help="comma-separated: only these of the campaign's scenarios (a part)"
    )
    args = ap.parse_args()
    chosen = set(args.scenarios.split(",")) if args.scenarios else None
    try:
        path = loader.resolve(args.campaign)
        text = source.read(path)
        if chosen is not None:
            text = some_scenarios(text, chosen, str(path))
        copy = one_platform(text, args.platform, needed(args.campaign, args.platform, chosen))
        checked = loader.parse(copy, str(args.output))
    except VirtbenchError as exc:
        sys.exit(f"one_platform: {exc}")
    which = f", scenarios {args.scenarios}" if chosen else ""
    args.output.write_text(
        f"# {checked.name}: only {args.platform}'s cells{which} (bench/one_platform.py)\n" + copy
    )
    print(f"{args.output}: {len(loader.expand.expand(checked))} cells of {args.platform}")


if __name__ == "__main__":
    main()
