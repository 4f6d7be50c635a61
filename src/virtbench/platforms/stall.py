"""Stall watchdog for a command run through any platform's `exec` (workloads opt in).

A tool that waits forever (a DNS lookup nobody answers, a lost peer) would otherwise hold the
cell until its timeout. The watchdog runs inside the environment, as a POSIX sh wrapper
(dash and busybox ash alike, so native, containers and VM guests need nothing new): every
second it adds up the CPU ticks of the tool and its descendants from /proc, with shell
builtins only, and stops the tool when they grew by less than ~1% of one CPU over `idle_s`
seconds. Only for tools that compute all the time: a tool that sleeps by design must not opt in.
"""

from __future__ import annotations

from ..errors import WorkloadError
from .base import ExecResult, Platform, check

STALL_EXIT = 86  # the wrapper's exit status when it stopped a stalled tool
MARKER = "vb-stall:"

# $1 = idle seconds, the rest is the tool's argv. ticks() walks the tool's process tree through
# /proc/PID/task/*/children and sums utime+stime+cutime+cstime (fields 14-17 of stat; the
# comm field may hold spaces, so the text up to the last ") " is cut first).
_SCRIPT = r"""
idle=$1; shift
"$@" &
pid=$!
ticks() {
  T=0; ALL=""; STATE=""; todo=$1
  while :; do
    set -- $todo; [ $# -gt 0 ] || break
    p=$1; shift; todo="$*"
    s=""
    read -r s 2>/dev/null < "/proc/$p/stat" || continue
    s=${s##*") "}; set -- $s
    [ $# -ge 15 ] || continue
    [ "$p" = "$pid" ] && STATE=$1
    T=$((T + ${12} + ${13} + ${14} + ${15})); ALL="$ALL $p"
    for c in /proc/"$p"/task/*/children; do
      kids=""; read -r kids 2>/dev/null < "$c"; todo="$todo $kids"
    done
  done
}
ticks "$pid"; mark=$T; quiet=0; n=0
while kill -0 "$pid" 2>/dev/null; do
  # short naps so a finished tool is noticed at once; its tree is walked once a second
  sleep 0.2; n=$((n + 1))
  s=""; read -r s 2>/dev/null < "/proc/$pid/stat"
  case "${s##*") "}" in Z*|X*|"") break ;; esac
  [ $((n % 5)) -eq 0 ] || continue
  ticks "$pid"
  if [ $((T - mark)) -ge "$idle" ] || [ "$T" -lt "$mark" ]; then
    mark=$T; quiet=0
  else
    quiet=$((quiet + 1))
  fi
  if [ "$quiet" -ge "$idle" ]; then
    echo "vb-stall: no CPU used for $idle s (under 1% of one CPU); stopped it" >&2
    kill -TERM $ALL 2>/dev/null; sleep 2; kill -KILL $ALL 2>/dev/null
    wait "$pid" 2>/dev/null
    exit 86
  fi
done
wait "$pid"
"""


def watched(argv: list[str], idle_s: int = 10) -> list[str]:
    """argv wrapped so that it is stopped after `idle_s` seconds without using CPU."""
    if idle_s < 2:
        raise ValueError("idle_s must be at least 2 seconds")
    return ["sh", "-c", _SCRIPT, "vb-watch", str(int(idle_s)), *argv]


def stall_reason(result: ExecResult) -> str | None:
    """The watchdog's own words if it stopped the tool, else None."""
    if result.returncode != STALL_EXIT:
        return None
    for line in result.stderr.splitlines():
        if line.startswith(MARKER):
            return line[len(MARKER) :].strip()
    return None


def check_watched(result: ExecResult, what: str, last_output: str = "") -> None:
    """check(), naming a stall first: 'hpcc: stalled: ... ; last output: ...'."""
    reason = stall_reason(result)
    if reason:
        tail = last_output.strip() or result.stdout.strip()
        lines = [ln for ln in tail.splitlines() if ln.strip()][-2:]
        last = " | ".join(ln.strip() for ln in lines) or "(none)"
        raise WorkloadError(
            f"{what}: stalled after {result.elapsed_s:.0f}s: {reason}; last output: {last}"
        )
    check(result, what)


def exec_watched(
    platform: Platform,
    argv: list[str],
    *,
    idle_s: int = 10,
    cpus: list[int] | None = None,
    timeout: float | None = None,
    env: dict[str, str] | None = None,
) -> ExecResult:
    """platform.exec(argv) under the stall watchdog."""
    return platform.exec(watched(argv, idle_s), cpus=cpus, timeout=timeout, env=env)
