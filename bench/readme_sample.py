#!/usr/bin/env python3
"""README's "Sample output" from a real run of the code it ships with (issue 39 item 7).

    cd REPO && PYTHONPATH=src flock /tmp/vb-measure.lock /opt/virtbench/venv/bin/python \
        bench/readme_sample.py

Runs the default campaign (`virtbench run`, as a new user does after ./install.sh) into a
temporary results directory, then rewrites README.md's "Sample output" block: the sentence
saying which code version ran (git describe), on what host, how many cells and how long it
took (wall time of the whole command, report included), and the fenced block with the run's
terminal output (stdout). The per-cell lines are cut to the first few and "…"; so are the
suites after the first (the HTML report has them all). The temporary directory is shown as
`results`, the directory `virtbench run` uses by default. What is rewritten lies between two
HTML comments, so running it again replaces only that: the lead re-runs it when other work
lands. `--dry-run` prints the new block instead of writing README.md. About 4-5 minutes on
the 2-core development host; run it under the machine lock.
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _campaign import run_campaign

REPO = Path(__file__).resolve().parents[1]
START = "<!-- bench/readme_sample.py: from here -->"
END = "<!-- bench/readme_sample.py: to here -->"
CELL_LINES = 3  # per-cell lines kept at the top of the sample
CELL = re.compile(r"(\[\d+/\d+\] )?[✓✗] ")  # one cell's line: "[3/48] ✓ native sysbench-cpu-1t …"
CELLS = re.compile(
    r": (\d+) cells \("
)  # the run's first line: "run ID campaign quick: 48 cells (…"
FIRST_SECTION = "## "
KEEP_HEADINGS = ("## verdict", "## scores")  # the answer; then one suite as an example


def code_version() -> str:
    done = subprocess.run(
        ["git", "-C", str(REPO), "describe", "--always", "--tags", "--dirty"],
        capture_output=True,
        text=True,
        check=False,
    )
    return done.stdout.strip() or "unknown"


def host_text() -> str:
    debian = Path("/etc/debian_version")
    system = f"Debian {debian.read_text().strip()}" if debian.exists() else platform.system()
    return f"{os.cpu_count()}-core {system} host (kernel {platform.release()})"


def trim(stdout: str, results: Path) -> str:
    """The run's output as a README shows it: the temporary directory named `results`, a few
    per-cell lines, the verdict and scores, the first suite, then the closing lines."""
    lines = stdout.replace(str(results), "results").rstrip("\n").splitlines()
    first_summary = next((i for i, x in enumerate(lines) if x.startswith("# ")), len(lines))
    head, summary = lines[:first_summary], lines[first_summary:]
    cells = [i for i, x in enumerate(head) if CELL.match(x)]
    if len(cells) > CELL_LINES:
        cut = cells[CELL_LINES:]
        head = [x for i, x in enumerate(head) if i not in cut[1:]]
        head[cut[0]] = "…"
    out, suites, skipping = [], 0, False
    for x in summary:
        if x.startswith(FIRST_SECTION):
            if not x.startswith(KEEP_HEADINGS):
                suites += 1
            if suites > 1 and not skipping:
                out.append("…")
                skipping = True
        if skipping and not x.startswith(("host:", "HTML report:")):
            continue
        out.append(x)
    return "\n".join(head + out)


def block(sample: str, version: str, wall_s: float, cells: int) -> str:
    minutes, seconds = divmod(round(wall_s), 60)
    return (
        f"{START}\n"
        f"The default campaign (`virtbench run`, the last step of `./install.sh`; {cells} cells) "
        f"on a shared, noisy {host_text()}, code version `{version}`, took "
        f"**{minutes}m{seconds:02d}s** of wall time (report included; measured by "
        "`bench/readme_sample.py`, which wrote this block). The run prints one line per cell, "
        "then the Markdown summary: the verdict first, then the scores and each suite; the "
        "HTML report has the same tables plus host facts, charts with error bars, the memory "
        "block-size curve and time series:\n\n"
        f"```\n{sample}\n```\n"
        f"{END}\n"
    )


def rewrite(readme: str, new: str) -> str:
    """README with its sample block replaced: between the markers, or (the first time) the
    text from "## Sample output" through its first fenced block."""
    if START in readme and END in readme:
        a, b = readme.index(START), readme.index(END) + len(END) + 1
        return readme[:a] + new + readme[b:]
    head = readme.index("## Sample output\n")
    start = readme.index("\n\n", head) + 2
    fence = readme.index("```\n", start)
    end = readme.index("```\n", fence + 4) + 4
    return readme[:start] + new + readme[end:]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--readme", type=Path, default=REPO / "README.md")
    ap.add_argument("--dry-run", action="store_true", help="print the block, leave README")
    args = ap.parse_args()
    version = code_version()
    with tempfile.TemporaryDirectory(prefix="vb-readme-sample-") as tmp:
        results = Path(tmp)
        t0 = time.monotonic()
        done = run_campaign(None, results, report=True)
        wall = time.monotonic() - t0
        if done.returncode != 0:
            done.print_tail(4000)
            print(f"virtbench run exited {done.returncode}: README left as it was")
            return 1
        m = CELLS.search(done.stdout)
        cells = int(m.group(1)) if m else sum(1 for x in done.stdout.splitlines() if CELL.match(x))
        new = block(trim(done.stdout, results), version, wall, cells)
    if args.dry_run:
        print(new)
        return 0
    args.readme.write_text(rewrite(args.readme.read_text(), new))
    print(f"{args.readme}: sample from code {version}, {wall:.0f} s wall, {cells} cells")
    return 0


if __name__ == "__main__":
    sys.exit(main())
