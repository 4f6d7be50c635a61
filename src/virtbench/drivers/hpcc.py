"""hpcc (HPC Challenge): LINPACK (HPL), DGEMM, STREAM triad, RandomAccess and FFT of one
single-process run, read from the Summary section of its hpccoutf.txt; with several problem
sizes, HPL's own result line per size (a matrix-order sweep in one run)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .. import labelkeys
from ..errors import WorkloadError

# hpccinf.txt, from Debian's /usr/share/doc/hpcc/examples/_hpccinf.txt with one problem size and
# a 1 x 1 process grid: hpcc runs as a single process (no MPI launcher), so it works unchanged
# in containers and VMs. Lines 33-36 (PTRANS) ask for no extra sizes.
# Open MPI's singleton start still resolves the hostname many times: an environment whose
# hostname is in no /etc/hosts and whose DNS server is unreachable (a NAT container, a VM)
# waits 10 s per lookup at 0% CPU. Containers and guests get an /etc/hosts for that reason
# (platforms/container/spec.etc_hosts, the VM's stage-2 init); the stall watchdog catches
# any other such wait.
_HPCCINF = """HPLinpack benchmark input file
Innovative Computing Laboratory, University of Tennessee
HPL.out      output file name (if any)
8            device out (6=stdout,7=stderr,file)
{count}            # of problems sizes (N)
{ns}          Ns
1            # of NBs
{nb}         NBs
0            PMAP process mapping (0=Row-,1=Column-major)
1            # of process grids (P x Q)
1            Ps
1            Qs
16.0         threshold
1            # of panel fact
2            PFACTs (0=left, 1=Crout, 2=Right)
1            # of recursive stopping criterium
4            NBMINs (>= 1)
1            # of panels in recursion
2            NDIVs
1            # of recursive panel fact.
1            RFACTs (0=left, 1=Crout, 2=Right)
1            # of broadcast
1            BCASTs (0=1rg,1=1rM,2=2rg,3=2rM,4=Lng,5=LnM)
1            # of lookahead depth
1            DEPTHs (>=0)
2            SWAP (0=bin-exch,1=long,2=mix)
64           swapping threshold
0            L1 in (0=transposed,1=no-transposed) form
0            U  in (0=transposed,1=no-transposed) form
1            Equilibration (0=no,1=yes)
8            memory alignment in double (> 0)
##### This line (no. 32) is ignored (it serves as a separator). ######
0                      		Number of additional problem sizes for PTRANS
1200 10000 30000        	values of N
0                       	number of additional blocking sizes for PTRANS
40 9 8 13 13 20 16 32 64       	values of NB
"""

_HPL_SECTION = re.compile(r"Begin of HPL section\.\n(.*?)\nEnd of HPL section\.", re.S)
# T/V  N  NB  P  Q  Time  Gflops, then (some lines later) the residual check of that run
_HPL_RUN = re.compile(r"^W\S+\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+([\d.]+)\s+([\d.eE+-]+)\s*$", re.M)
_RESIDUAL = re.compile(r"\.\.\.\.\.\. (PASSED|FAILED)")
_SUMMARY = re.compile(r"Begin of Summary section\.\n(.*?)\nEnd of Summary section\.", re.S)

# hpcc summary key -> (figure, scale to the figure's unit); HPL is the one that must be there
FIGURES = {
    "HPL_Tflops": ("hpl_gflops", 1000.0),
    "SingleDGEMM_Gflops": ("dgemm_gflops", 1.0),
    "SingleSTREAM_Triad": ("stream_triad_gbs", 1.0),
    "SingleRandomAccess_GUPs": ("random_access_gups", 1.0),
    "SingleFFT_Gflops": ("fft_gflops", 1.0),
}


MAX_PROBLEM_SIZES = 20  # HPL's own limit on the Ns line


def input_file(n: int | Sequence[int], nb: int) -> str:
    """hpccinf.txt for HPL problems of size `n` (one or several), block size `nb`, on a
    1 x 1 grid. hpcc sizes its other tests after the largest."""
    ns = [n] if isinstance(n, int) else list(n)
    if not 1 <= len(ns) <= MAX_PROBLEM_SIZES:
        raise ValueError(f"1..{MAX_PROBLEM_SIZES} problem sizes, got {len(ns)}")
    return _HPCCINF.format(count=len(ns), ns=" ".join(str(x) for x in ns), nb=nb)


def argv(workdir: str) -> list[str]:
    """hpcc reads hpccinf.txt from, and appends hpccoutf.txt to, its working directory."""
    # sh, not `env -C`: busybox env (VM guests) has no -C; the path is an argument, never part
    # of the script text
    return ["sh", "-c", 'cd "$1" && exec hpcc', "sh", workdir]


def parse_summary(text: str, what: str) -> dict[str, str]:
    """The key=value pairs of the Summary section of hpccoutf.txt."""
    m = _SUMMARY.search(text)
    if not m:
        raise WorkloadError(f"{what}: no Summary section in hpccoutf.txt (hpcc did not finish?)")
    out: dict[str, str] = {}
    for line in m.group(1).splitlines():
        key, sep, value = line.partition("=")
        if sep:
            out[key.strip()] = value.strip()
    return out


@dataclass
class HpccResult:
    figures: dict[str, float]  # figure (FIGURES order) -> value; those hpcc reported
    labels: dict[str, Any]  # the run's N, NB, processes and HPL time
    invalid: str | None  # why the figures are no measurement, None when they are one


def parse(text: str, what: str) -> HpccResult:
    """hpccoutf.txt: the FIGURES it reports and its verdict on them."""
    summary = parse_summary(text, what)
    labels: dict[str, Any] = {
        labelkeys.N: _int_or_none(summary.get("HPL_N")),
        labelkeys.NB: _int_or_none(summary.get("HPL_NB")),
        labelkeys.PROCESSES: _int_or_none(summary.get("CommWorldProcs")),
        labelkeys.HPL_TIME_S: _float_or_none(summary.get("HPL_time")),
    }
    invalid = None
    if summary.get("Success") != "1":
        invalid = "hpcc reports Success=0 (a test failed its verification)"
    elif "FAILED" in text.split("Begin of HPL section.", 1)[-1].split("End of HPL", 1)[0]:
        invalid = "HPL residual check FAILED"
    figures: dict[str, float] = {}
    for key, (figure, scale) in FIGURES.items():
        value = _float_or_none(summary.get(key))
        if value is None:
            if figure == "hpl_gflops":
                raise WorkloadError(f"{what}: no {key} in hpcc Summary section")
            continue
        figures[figure] = value * scale
    return HpccResult(figures, labels, invalid)


def _float_or_none(v: str | None) -> float | None:
    try:
        return float(v) if v is not None else None
    except ValueError:
        return None


def _int_or_none(v: str | None) -> int | None:
    f = _float_or_none(v)
    return int(f) if f is not None else None


@dataclass
class HplRun:
    n: int
    nb: int
    processes: int
    time_s: float
    gflops: float
    passed: bool  # HPL's residual check


def parse_hpl_runs(text: str, what: str) -> list[HplRun]:
    """Every HPL result line of hpccoutf.txt's HPL section, one per (N, NB) run, in order."""
    section = _HPL_SECTION.search(text)
    if not section:
        raise WorkloadError(f"{what}: no HPL section in hpccoutf.txt (hpcc did not finish?)")
    body = section.group(1)
    matches = list(_HPL_RUN.finditer(body))
    if not matches:
        raise WorkloadError(f"{what}: no HPL result line in hpccoutf.txt")
    runs = []
    for i, m in enumerate(matches):
        # the residual check printed after this run's line and before the next one
        end = matches[i + 1].start() if i + 1 < len(matches) else len(body)
        check = _RESIDUAL.search(body, m.end(), end)
        n, nb, p, q = (int(m.group(k)) for k in range(1, 5))
        runs.append(
            HplRun(
                n,
                nb,
                p * q,
                float(m.group(5)),
                float(m.group(6)),
                passed=check is not None and check.group(1) == "PASSED",
            )
        )
    return runs
