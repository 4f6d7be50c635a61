"""The cell's one sampler: CPU of every watched role; detail, host and kept points only inside
a window; roles a window brought in leave with it. Ticks are driven by hand (no thread)."""

import os
import time

from tests.unit.fakes import FakePlatform
from virtbench.metrics.sampler import HOST_ROLE, Sampler
from virtbench.platforms.base import Accounting


class CgroupPlatform(FakePlatform):
    """An environment whose cgroup is a directory we write: cpu.stat and our own process."""

    def __init__(self, name, cgroup_dir):
        super().__init__(name, [])
        self.dir = cgroup_dir
        cgroup_dir.mkdir()
        (cgroup_dir / "cgroup.threads").write_text(f"{os.getpid()}\n")
        self.use(0)

    def use(self, usec):
        (self.dir / "cpu.stat").write_text(f"usage_usec {usec}\nuser_usec 0\n")

    def accounting(self):
        return Accounting(cgroups={"unified": str(self.dir)})


def _roles_metrics(points):
    return {(role, metric) for metric, _t, _v, _unit, role in points}


def test_cpu_for_watched_roles_detail_only_in_a_window(tmp_path):
    target = CgroupPlatform("target", tmp_path / "t")
    neighbour = CgroupPlatform("n", tmp_path / "n")
    points = []
    s = Sampler(lambda *a: points.append(a))
    s.add("target", target)
    s.tick()  # first reading: nothing to compare with yet
    target.use(50_000)
    s.tick()
    assert _roles_metrics(points) == {("target", "cpu_util")}
    assert points[0][2] > 0 and points[0][3] == "%"

    points.clear()
    with s.window({"target": target, "neighbour-1": neighbour}) as window:
        target.use(100_000)
        neighbour.use(20_000)
        s.tick()
        time.sleep(0.05)  # /proc/stat counts in clock ticks: let the host's counters move
        s.tick()
    seen = _roles_metrics(points)
    assert {("target", "cpu_util"), ("neighbour-1", "cpu_util")} <= seen
    assert ("target", "exe_per_s") in seen and ("neighbour-1", "sched_run_pct") in seen
    assert any(role == HOST_ROLE for role, _m in seen)
    summary = window.summary()
    assert summary[("target", "cpu_util")].n == 2 and summary[("target", "cpu_util")].unit == "%"
    assert ("neighbour-1", "cpu_util") in summary

    points.clear()
    s.tick()  # the window closed: the neighbour left with it, the target is back to its CPU
    assert _roles_metrics(points) == {("target", "cpu_util")}
    assert window.summary()[("target", "cpu_util")].n == 2


def test_a_role_added_during_a_window_joins_it(tmp_path):
    target = CgroupPlatform("target", tmp_path / "t")
    late = CgroupPlatform("late", tmp_path / "l")
    points = []
    s = Sampler(lambda *a: points.append(a))
    with s.window({"target": target}) as window:
        s.add("neighbour-1", late)  # a start-up storm newcomer
        s.tick()
        late.use(10_000)
        s.tick()
    assert ("neighbour-1", "cpu_util") in window.summary()
    points.clear()
    s.tick()
    assert points == []  # both roles came with the window and left with it


def test_a_role_added_during_a_window_is_read_from_its_first_tick(tmp_path):
    """Unprimed, a storm newcomer's first tick only set its baseline: its first second after
    it was ready had no cpu_util."""
    target = CgroupPlatform("target", tmp_path / "t")
    late = CgroupPlatform("late", tmp_path / "l")
    s = Sampler()
    with s.window({"target": target}) as window:
        s.add("neighbour-1", late)
        late.use(10_000)
        s.tick()
    assert window.summary()[("neighbour-1", "cpu_util")].n == 1


def _two_size_window():
    """A cell serving 1 KB over (1, 9] and 70 KB over (10, 18] (cell-axis seconds), with a
    set-up second before each; CPU 20 % at 1 KB, 60 % at 70 KB, 95 % while setting up."""
    from virtbench.metrics.sampler import Window

    w = Window()
    for t in range(1, 20):
        value = 95.0 if t in (1, 10, 19) else (20.0 + t % 2 if t < 10 else 60.0 + t % 2)
        w.keep("target", "cpu_util", value, "%", (t - 1.0, float(t)))
        w.keep("neighbour-1", "cpu_util", value / 2, "%", (t - 1.0, float(t)))
    spans = [
        ({"file_size_kb": 1, "connections": 32}, 1.0, 9.0),
        ({"file_size_kb": 70, "connections": 32}, 10.0, 18.05),
    ]
    return w, spans


def test_summaries_are_per_served_point_and_leave_out_the_gaps():
    from virtbench.metrics.sampler import summary_samples

    w, spans = _two_size_window()
    out = summary_samples(w, spans, {"cpu_budget": "none"})
    by = {(s.role, s.labels["file_size_kb"]): s for s in out}
    assert len(out) == 4 and set(by) == {(r, k) for r in ("target", "neighbour-1") for k in (1, 70)}
    one, seventy = by[("target", 1)], by[("target", 70)]
    # readings of (1, 9]: t = 2..9, the set-up readings at t = 1, 10, 19 are in no point
    assert one.value == 20.5 and one.labels["n"] == 8
    assert seventy.value == 60.5 and seventy.labels["n"] == 8
    assert by[("neighbour-1", 70)].value == 30.25
    assert one.labels["connections"] == 32 and one.labels["cpu_budget"] == "none"
    assert one.labels["stat"] == "mean of 1 s samples" and one.labels["cov"] < 0.05
    assert "scope" not in one.labels  # no cell-wide figure beside them


def test_without_points_one_summary_over_the_whole_window_as_before():
    from virtbench.metrics.sampler import summary_samples

    w, _spans = _two_size_window()
    (target,) = [s for s in summary_samples(w, [], {}) if s.role == "target"]
    assert target.labels["n"] == 19 and "file_size_kb" not in target.labels


def test_web_solo_stores_the_targets_summaries_per_point(tmp_path):
    """A web solo cell reads the target in detail (as co-location does) and stores its
    summaries per point the workload reported: 1 KB light, 70 KB heavy, never their mean."""
    from virtbench.scenarios.base import ScenarioEnv
    from virtbench.scenarios.solo import Solo
    from virtbench.workloads.base import Metric, RunContext, Workload

    target = CgroupPlatform("target", tmp_path / "t")
    s = Sampler()
    s.add("target", target)

    class Web(Workload):
        suite, name, description = "web", "fake-web", "two sizes, one tick each"
        metrics = (Metric("requests_per_s", "req/s", True, primary=True),)

        def run(self, platform, ctx):
            used = 0
            for size, usec in ((1, 20_000), (70, 200_000)):
                start = time.monotonic()
                used += usec
                target.use(used)
                time.sleep(0.4)  # apart by more than EDGE_S
                s.tick()
                ctx.point({"file_size_kb": size}, start, time.monotonic())
                time.sleep(0.3)  # a gap between sizes: its reading belongs to no point
                s.tick()
            return [self.sample("requests_per_s", 1.0)]

    env = ScenarioEnv(target, Web(), RunContext({}), new_platform=None, sampler=s)
    out = Solo([]).run(env)
    cpu = {x.labels["file_size_kb"]: x for x in out if x.metric == "cpu_util"}
    assert set(cpu) == {1, 70} and cpu[1].labels["n"] == cpu[70].labels["n"] == 1
    assert cpu[70].value > 5 * cpu[1].value  # 200 ms vs 20 ms of CPU in ~0.4 s


def test_one_reading_at_a_point_has_no_spread():
    """A 2 s sweep step often holds one whole 1 s interval: its summary must not claim a
    stdev and CoV of 0 (a perfectly steady point); the role bars then draw no whisker."""
    from virtbench.metrics.sampler import Window, summary_samples
    from virtbench.report.suites.colocation.roles import _mean_sd_bar

    w = Window()
    for t, value in ((1, 10.0), (2, 40.0), (3, 20.0), (4, 30.0)):
        w.keep("target", "cpu_util", value, "%", (t - 1.0, float(t)))
    spans = [({"step": 0}, 0.95, 2.0), ({"step": 1}, 1.95, 4.05)]
    by = {s.labels["step"]: s for s in summary_samples(w, spans, {})}
    assert by[0].labels["n"] == 1 and by[0].value == 40.0
    assert by[0].labels["stdev"] is None and by[0].labels["cov"] is None
    assert by[1].labels["n"] == 2 and by[1].labels["cov"] > 0
    bar = _mean_sd_bar([{"value": by[0].value, "labels": by[0].labels}])
    assert bar.value == 40.0 and bar.low is None and bar.high is None


class _ProcessPlatform(FakePlatform):
    """An environment of this test's own process, with no cgroup CPU counter."""

    def __init__(self, pids, threads=(), cgroups=None):
        super().__init__("p", [])
        self.acct = Accounting(pids=list(pids), threads=list(threads), cgroups=cgroups or {})

    def accounting(self):
        return self.acct


def _burn(cpu_s):
    start = time.thread_time()
    while time.thread_time() - start < cpu_s:
        pass


def test_a_vm_without_a_cgroup_keeps_every_qemu_threads_cpu_in_a_window():
    """A VM whose cgroup could not be made (no limits asked) is accounted by its QEMU process;
    in a window its cpu_util was replaced by the schedstat sum of its named (vCPU) threads
    only, dropping the back-end threads' CPU: an idle vCPU beside a busy main loop read 0 %."""
    import threading

    stop = threading.Event()
    vcpu = threading.Thread(target=stop.wait, daemon=True)  # the guest idles
    vcpu.start()
    try:
        platform = _ProcessPlatform([os.getpid()], threads=[vcpu.native_id])
        points = []
        s = Sampler(lambda *a: points.append(a))
        with s.window({"target": platform}):
            s.tick()
            points.clear()
            _burn(0.2)  # this (main) thread is QEMU's main loop: back-end work
            s.tick()
    finally:
        stop.set()
    got = {metric: value for metric, _t, value, _u, role in points if role == "target"}
    assert got["backend_cpu_util"] > 5 and got["vcpu_cpu_util"] < 0.5 * got["backend_cpu_util"]
    # the process's own times: vCPU and back end (within /proc/PID/stat's 10 ms ticks)
    assert got["cpu_util"] > 0.8 * got["backend_cpu_util"]


def test_a_cgroup_without_a_cpu_counter_still_counts_unreaped_children():
    """Native whose cpu(acct) controller was dropped keeps its other groups (memory, pids):
    `acct.cgroups` is not empty, yet its CPU comes from /proc/PID/stat, which misses children
    until they are reaped (nginx workers). The schedstat sum over its descendants counts them."""
    import subprocess
    import sys

    child = subprocess.Popen(
        [sys.executable, "-c", _CHILD], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        platform = _ProcessPlatform([os.getpid()], cgroups={"memory": "/nonexistent-vb-test"})
        points = []
        s = Sampler(lambda *a: points.append(a))
        with s.window({"target": platform}):
            s.tick()
            points.clear()
            t0 = time.monotonic()
            child.stdin.write("go\n")
            child.stdin.flush()
            assert child.stdout.readline().strip() == "done"  # 0.2 s of CPU used, still alive
            s.tick()
            wall = time.monotonic() - t0
    finally:
        child.kill()
        child.wait()
    got = {metric: value for metric, _t, value, _u, role in points if role == "target"}
    assert got["cpu_util"] > 0.8 * 100 * 0.2 / (wall + 0.1)


_CHILD = """
import sys, time
sys.stdin.readline()
start = time.thread_time()
while time.thread_time() - start < 0.2:
    pass
print("done", flush=True)
time.sleep(60)
"""


def test_the_first_reading_in_a_window_covers_the_window_only(tmp_path):
    """A watched role's CPU reading before the window opened must not be kept as the
    window's first second: its rate ran from the tick before the window, its kept span from
    the window's start, so CPU used before the scene counted at a point starting with it."""
    target = CgroupPlatform("target", tmp_path / "t")
    s = Sampler()
    s.add("target", target)
    s.tick()
    target.use(500_000)  # 0.5 s of CPU before the scene (a warm-up, the last cell's end)
    with s.window({"target": target}) as window:
        time.sleep(0.05)
        s.tick()  # the target used nothing since the window opened
    ((_a, _b, value),) = window.points[("target", "cpu_util")]
    assert value == 0.0


class _FlakyCgroup(CgroupPlatform):
    """A cgroup environment whose reads can fail for a tick: `accounting()` raises (a
    container restarting), or its cpu.stat is gone (a transient cgroup read error)."""

    def __init__(self, name, cgroup_dir, pids=()):
        super().__init__(name, cgroup_dir)
        self.pids, self.raises = list(pids), False

    def hide(self):
        (self.dir / "cpu.stat").unlink()

    def accounting(self):
        if self.raises:
            raise OSError("gone for a tick")
        return Accounting(pids=self.pids, cgroups={"unified": str(self.dir)})


def test_a_failed_read_leaves_a_gap_not_a_two_tick_rate_kept_as_one(tmp_path):
    """A role whose read failed kept its older CPU reading: the next rate ran over two ticks
    but was kept with the last tick's span only, so a 2 s average counted as the 1 s (b, c]
    at the point holding it. The interval after a failed read has no cpu_util reading."""
    for fail in ("no counter", "raise"):
        target = _FlakyCgroup("target", tmp_path / fail)
        s = Sampler()
        with s.window({"target": target}) as window:
            s.tick()
            t_a = window.last_t
            if fail == "raise":
                target.raises = True
            else:
                target.hide()
            s.tick()
            t_b = window.last_t
            target.raises = False
            target.use(300_000)  # 0.3 s of CPU, all of it in (a, c], none known of (b, c]
            s.tick()
            t_c = window.last_t
            s.tick()  # the readings go on from c
        spans = [(a, b) for a, b, _v in window.points[("target", "cpu_util")]]
        assert all(a != t_b for a, _b in spans), fail
        assert (t_c, window.last_t) in spans and t_a in {b for _a, b in spans}


def test_cpu_is_never_differenced_across_sources(tmp_path):
    """A transient cgroup read error fell back to /proc: the next reading differenced the
    cgroup's cumulative counter against this process's /proc times (or the other way round),
    a rate of thousands of %. A source change restarts the baseline."""
    target = _FlakyCgroup("target", tmp_path / "t", pids=[os.getpid()])
    target.use(1_000_000_000)  # the cgroup has used 1000 s since it was made
    points = []
    s = Sampler(lambda *a: points.append(a))
    s.add("target", target)
    s.tick()
    for step in range(1, 5):
        time.sleep(0.1)
        if step == 2:
            target.hide()  # this tick reads /proc: this process's few seconds
        else:
            target.use(1_000_000_000 + 5_000 * step)  # 5 ms of CPU a 0.1 s tick: ~5 %
        s.tick()
    values = [v for metric, _t, v, _u, role in points if metric == "cpu_util"]
    # ticks 1 and 4 are cgroup against cgroup; 2 is /proc after the cgroup, 3 the other way
    assert len(values) == 2 and all(0 <= v <= 100 * (os.cpu_count() or 1) for v in values)
