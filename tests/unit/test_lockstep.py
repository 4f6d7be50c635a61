"""Lockstep pair scenarios (issue 12): a shared schedule of each environment's own solo peak,
every step started and ended together, each step judged on its own window."""

from __future__ import annotations

import queue
import threading
import time
from types import SimpleNamespace

import pytest

from virtbench.drivers import sweep
from virtbench.scenarios import rates
from virtbench.scenarios.peaks import Peak
from virtbench.workloads.web import HttperfSweep


def test_schedule_is_the_same_shares_of_each_peak():
    # seed 000: both servers at 10 %, 20 % ... 100 % of their own full load
    assert sweep.schedule(1000, 0.1, 0.1, 1.0) == [100.0 * k for k in range(1, 11)]
    assert sweep.schedule(250, 0.1, 0.1, 1.0)[-1] == 250.0
    assert len(sweep.schedule(5101, 0.2, 0.2, 1.2)) == 6


class _Clock:
    """The windows' clock, moved only by the test: every stamp is exact, none depends on how
    fast a thread ran."""

    def __init__(self, now: float = 0.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


HANG_S = 10.0  # a guard against a hang, never a bound on how long anything took


class _Party:
    """One environment's thread doing one call at a time when the test says so: the test
    orders the calls and reads what each returned (or raised)."""

    def __init__(self, lock: sweep.Lockstep, name: str) -> None:
        self.party = lock.party(name)
        self.todo: queue.Queue = queue.Queue()
        self.done: queue.Queue = queue.Queue()
        self.thread = threading.Thread(target=self._loop, daemon=True)
        self.thread.start()

    def _loop(self) -> None:
        while (call := self.todo.get()) is not None:
            fn, kw = call
            try:
                self.done.put(getattr(self.party, fn)(**kw))
            except BaseException as exc:  # the test's thread raises it
                self.done.put(exc)

    def send(self, fn: str, **kw) -> None:
        self.todo.put((fn, kw))

    def result(self):
        out = self.done.get(timeout=HANG_S)
        if isinstance(out, BaseException):
            raise out
        return out

    def stop(self) -> None:
        self.todo.put(None)
        self.thread.join(HANG_S)


def _waits(p: _Party, barrier: threading.Barrier) -> bool:
    """Whether p's call is held at `barrier` (False: it returned without waiting there). The
    only party calling, it is held when the barrier counts one waiting; polled, not timed."""
    deadline = time.monotonic() + HANG_S
    while p.done.empty():
        if barrier.n_waiting == 1:
            return True
        assert time.monotonic() < deadline, "neither held nor returned"
        time.sleep(0.001)
    return False


def _step(clock: _Clock, a: _Party, b: _Party, start: float, end: float, served=None):
    """Both begin at `start` and end at `end` (each having `served` what it says); their
    verdicts."""
    clock.now = start
    for p in (a, b):
        p.send("begin")
    for p in (a, b):
        p.result()
    clock.now = end
    for p in (a, b):
        p.send("end", served=(served or {}).get(p.party.name))
    return [p.result() for p in (a, b)]


def _pair(timeout_s: float = 60.0) -> tuple[sweep.Lockstep, _Clock, _Party, _Party]:
    clock = _Clock()
    lock = sweep.Lockstep(["target", "neighbour-1"], 0.95, 0.05, timeout_s, clock=clock)
    return lock, clock, _Party(lock, "target"), _Party(lock, "neighbour-1")


def test_steps_start_together_and_only_the_unshared_step_is_invalid():
    lock, clock, target, neighbour = _pair()
    # step 0: the target arrives first and waits for the neighbour to begin (at 1.0)
    target.send("begin")
    assert _waits(target, lock._begin)
    clock.now = 1.0
    neighbour.send("begin")
    target.result(), neighbour.result()
    assert lock.windows[0]["target"][0] == lock.windows[0]["neighbour-1"][0] == 1.0
    clock.now = 2.0
    target.send("end")
    assert _waits(target, lock._end)  # and for it to end the step
    neighbour.send("end")
    assert [target.result(), neighbour.result()] == [None, None]
    # step 1: the neighbour's ends after 0.125 s, the target's runs 0.5 s; the neighbour's
    # end waits for the target's, its own window was covered: only the target's is unshared
    clock.now = 2.0
    for p in (target, neighbour):
        p.send("begin")
    target.result(), neighbour.result()
    clock.now = 2.125
    neighbour.send("end")
    assert _waits(neighbour, lock._end)
    clock.now = 2.5
    target.send("end")
    assert target.result() == (
        "step window not shared: neighbour-1 ran it for 25% of this one's 0.5 s"
    )
    assert neighbour.result() is None
    assert _step(clock, target, neighbour, 3.0, 4.0) == [None, None]  # step 2
    for p in (target, neighbour):
        p.stop()


def test_a_step_is_shared_within_min_share_or_the_slack_and_not_beyond():
    lock = sweep.Lockstep(["target", "neighbour-1"], 0.95, 0.05, timeout_s=1)

    def verdict(n: int, own: tuple[float, float], other: tuple[float, float]) -> str | None:
        for name, (start, end) in (("target", own), ("neighbour-1", other)):
            lock.mark(n, name, 0, start)
            lock.mark(n, name, 1, end)
        return lock.verdict(n, "target")

    # a short step: 92 % covered, 0.04 s uncovered (within the slack) / 0.06 s (beyond it)
    assert verdict(0, (0.0, 0.5), (0.0, 0.46)) is None
    assert "neighbour-1 ran it for 88%" in verdict(1, (0.0, 0.5), (0.0, 0.44))
    # a long step: 96 % covered is shared though 0.4 s is uncovered; 94 % is not
    assert verdict(2, (0.0, 10.0), (0.4, 10.0)) is None
    assert "neighbour-1 ran it for 94%" in verdict(3, (0.0, 10.0), (0.6, 10.0))
    # a window that never ended does not count as covering anything
    lock.mark(4, "target", 0, 0.0)
    lock.mark(4, "target", 1, 1.0)
    lock.mark(4, "neighbour-1", 0, 0.0)
    assert lock.verdict(4, "target") == "step window not shared: neighbour-1 stopped before it"


def test_the_windows_clock_is_monotonic_unless_given():
    assert sweep.Lockstep(["a", "b"], 0.95, 0.05, timeout_s=1).clock is time.monotonic


def test_a_party_that_stops_leaves_the_others_steps_unshared():
    lock, clock, target, neighbour = _pair()
    assert _step(clock, target, neighbour, 0.0, 1.0) == [None, None]
    target.send("begin")  # step 1: the target waits for a neighbour that stops instead
    assert _waits(target, lock._begin)
    neighbour.stop()
    lock.abort()  # as the engine does when a workload returns
    target.result()  # released
    clock.now = 2.0
    target.send("end")  # no wait: the barriers stay broken
    assert target.result() == "step window not shared: neighbour-1 stopped before it"
    target.send("begin")
    target.result()
    clock.now = 3.0
    target.send("end")
    assert target.result() == "step window not shared: neighbour-1 stopped before it"
    target.stop()


def test_a_partner_that_never_comes_times_out_the_barriers():
    """A party whose partner hangs is let go after the barrier's timeout (however long that
    really takes) and its step counts as unshared."""
    lock, clock, target, neighbour = _pair(timeout_s=0.01)
    target.send("begin")
    target.result()
    assert lock._begin.broken
    clock.now = 1.0
    target.send("end")
    assert target.result() == "step window not shared: neighbour-1 stopped before it"
    assert lock._end.broken
    for p in (target, neighbour):
        p.stop()


def test_a_partner_that_served_nothing_leaves_the_step_alone():
    """A neighbour whose server died (a VM's stalled NIC) ran its windows in step, but the
    target's steps were not co-located: they are invalid, the neighbour's own are not."""
    lock, clock, target, neighbour = _pair()
    served = [True, False, None]  # None: not known, no verdict
    verdicts = [
        _step(clock, target, neighbour, k, k + 1.0, {"target": True, "neighbour-1": s})
        for k, s in enumerate(served)
    ]
    assert [v[0] for v in verdicts] == [
        None,
        "step window not shared: neighbour-1 served nothing in it",
        None,
    ]
    assert [v[1] for v in verdicts] == [None, None, None]
    for p in (target, neighbour):
        p.stop()


class _Peaks:
    def __init__(self, by_size: dict[int, float]) -> None:
        self.by_size, self.asked = by_size, []

    def get(self, platform, workload, params, ctx):
        self.asked.append(params)
        return Peak(self.by_size[params["file_sizes"][0]], f"cell-{params['file_sizes'][0]}")


def test_apply_schedule_takes_one_solo_peak_per_size():
    params = {"file_sizes": [1, 50], "start_fraction": 0.1, "step_fraction": 0.1}
    params |= {"max_fraction": 1.0, "rate": 0.0}
    peaks = _Peaks({1: 14336.0, 50: 5101.0})
    env = SimpleNamespace(workload=HttperfSweep(), solo_peaks=peaks, ctx=None)
    out, by_size = rates.apply_schedule(env, SimpleNamespace(name="c"), params)
    assert out["schedule"]["1"][0] == pytest.approx(1433.6)
    assert out["schedule"]["50"][-1] == pytest.approx(5101.0)
    assert {k: p.value for k, p in by_size.items()} == {"1": 14336.0, "50": 5101.0}
    # each peak is a solo run of one size, without a rate limit or a schedule
    assert [p["file_sizes"] for p in peaks.asked] == [[1], [50]]
    assert all("schedule" not in p and p["rate"] == 0.0 for p in peaks.asked)


def test_each_ended_step_labels_its_index_the_same_for_every_party():
    lock = sweep.Lockstep(["target", "neighbour-1"], 0.95, 0.05, timeout_s=10)
    seen: dict[str, list[dict]] = {}

    def run(name: str) -> None:
        party = lock.party(name)
        for _ in range(3):
            party.begin()
            party.end()
            seen.setdefault(name, []).append(party.labels())

    threads = [threading.Thread(target=run, args=(n,)) for n in lock.names]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    steps = [{"lockstep_step": k} for k in range(3)]
    assert seen == {"target": steps, "neighbour-1": steps}
