#!/usr/bin/env python3
"""Why the remote load generator is driven by plain ssh (ControlMaster), not Ansible ad-hoc:
the cost of one remote command on a simulated host (a network namespace with a real sshd,
tests/integration/fleet_hosts.py), and of one client run through serving/remote.py's
wrapper (pinning, wait4, /proc/stat, the RTT probe), and one clock exchange.

Needs root; run under the machine lock:
  flock /tmp/vb-measure.lock bench/fleet_remote_call.py [--calls 20]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests.integration

from tests.integration.fleet_hosts import fleet  # noqa: E402
from virtbench.fleet.ansible import ansible_env  # noqa: E402
from virtbench.serving import remote  # noqa: E402


def timed(fn, n: int) -> list[float]:
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return out


def show(what: str, xs: list[float]) -> None:
    ms = [1000 * x for x in xs]
    sd = statistics.stdev(ms) if len(ms) > 1 else 0.0
    med = statistics.median(ms)
    print(f"{what:<44} {statistics.mean(ms):>8.1f} ms ± {sd:.1f} (median {med:.1f}, n={len(ms)})")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--calls", type=int, default=20)
    args = ap.parse_args()
    env = {**os.environ, **ansible_env()}
    with (
        tempfile.TemporaryDirectory(prefix="vb-remote-bench-") as d,
        fleet(Path(d) / "h", ["r1"]) as f,
    ):
        inv = f.inventory(Path(d) / "inv.ini")
        target = remote.resolve(inv, "r1", "bench")
        client = remote.RemoteClient(target, "127.0.0.1")
        client.check()  # opens the master
        run = lambda argv: subprocess.run(argv, capture_output=True, check=True)  # noqa: E731
        show("ssh, ControlMaster open: true", timed(lambda: run(target.argv("true")), args.calls))
        swap = {"ControlMaster=auto": "ControlMaster=no", "ControlPersist=60": "ControlPersist=no",
                f"ControlPath={remote.CONTROL_PATH}": "ControlPath=none"}  # fmt: skip
        no_master = [swap.get(a, a) for a in target.argv("true")]
        show("ssh, new connection each time: true", timed(lambda: run(no_master), args.calls))
        show("wrapper: client run of `true` (+RTT probe)",
             timed(lambda: client.run(["true"], [0], 10.0), args.calls))  # fmt: skip
        show("clock offset (7 exchanges)", timed(client.clock, max(3, args.calls // 4)))
        adhoc = ["ansible", "r1", "-i", str(inv), "-m", "command", "-a", "true"]
        show("ansible ad-hoc -m command true",
             timed(lambda: subprocess.run(adhoc, capture_output=True, check=True, env=env),
                   max(3, args.calls // 4)))  # fmt: skip
        off, err = client.clock()
        print(f"clock offset of the simulated host: {1000 * off:+.3f} ms ± {1000 * err:.3f}")
        client.close()


if __name__ == "__main__":
    main()
