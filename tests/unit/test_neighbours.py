"""The neighbour layer (scenarios/neighbours.py) with fake platforms: memory check first,
provisioning order, pinning, health checks, deferred starts, reverse teardown on failure,
and both kinds of scenario (antagonist, co-location) going through it."""

from __future__ import annotations

import contextlib
import threading

import pytest

from tests.unit.fakes import FakePlatform
from virtbench.errors import VirtbenchError, WorkloadError
from virtbench.platforms.base import ExecResult, PlatformSpec, Process
from virtbench.scenarios import registry
from virtbench.scenarios.base import ScenarioEnv
from virtbench.scenarios.neighbours import IDLE_ARGV, NeighbourPlan, Neighbours, idle
from virtbench.workloads.base import Metric, Param, RunContext, Workload

PLENTY = "MemAvailable:    8388608 kB\n"  # 8 GiB
NATIVE = PlatformSpec("native", "native")


class LoggingProcess(Process):
    def __init__(self, log: list[str], role: str, dead: threading.Event) -> None:
        self.log, self.role, self.dead, self.stopped = log, role, dead, False

    @property
    def pid(self):
        return None

    def poll(self):
        return 1 if self.dead.is_set() or self.stopped else None

    def stop(self, timeout: float = 5.0) -> ExecResult:
        if not self.stopped:
            self.log.append(f"stop {self.role}")
        self.stopped = True
        return ExecResult([], 0, "", "gone", 0.0)


class LoggingPlatform(FakePlatform):
    """Logs spawns; can be made to fail spawn or exec."""

    def __init__(self, role: str, log: list[str], spawn_fails=False, exec_fails=False) -> None:
        super().__init__(role, log)
        self.role = role
        self.spawn_fails, self.exec_fails = spawn_fails, exec_fails
        self.spawned: list[tuple[list[str], list[int] | None]] = []
        self.dead = threading.Event()  # set it to make the spawned command "exit"

    def exec(self, argv, *, cpus=None, timeout=None, env=None):
        return ExecResult(argv, 1 if self.exec_fails else 0, "", "no shell", 0.0)

    def spawn(self, argv, *, cpus=None, env=None):
        if self.spawn_fails:
            raise VirtbenchError("cannot spawn")
        self.spawned.append((argv, cpus))
        self.log.append(f"spawn {self.role}")
        return LoggingProcess(self.log, self.role, self.dead)


class Host:
    """A fake runner: `new_platform` logs up/down per role; some roles can be made to fail."""

    def __init__(self, fail_up=(), fail_spawn=(), fail_exec=()) -> None:
        self.log: list[str] = []
        self.platforms: dict[str, LoggingPlatform] = {}
        self.fail_up, self.fail_spawn, self.fail_exec = fail_up, fail_spawn, fail_exec

    @contextlib.contextmanager
    def new_platform(self, spec, role):
        if role in self.fail_up:
            raise VirtbenchError("boom")
        p = LoggingPlatform(role, self.log, role in self.fail_spawn, role in self.fail_exec)
        self.platforms[role] = p
        self.log.append(f"up {role}")
        try:
            yield p
        finally:
            self.log.append(f"down {role}")

    def env(self, workload=None, params=None) -> ScenarioEnv:
        target = LoggingPlatform("target", self.log)
        ctx = RunContext(params=params or {})
        return ScenarioEnv(target, workload, ctx, self.new_platform, platforms={"native": NATIVE})


def test_memory_is_checked_before_anything_is_provisioned():
    host = Host()
    vm = PlatformSpec("vm", "vm", {"memory_mib": 4096})
    plans = [NeighbourPlan(f"neighbour-{i}", vm, idle) for i in (1, 2)]
    with (
        pytest.raises(VirtbenchError, match=r"scenario 'x': 2 neighbour .* 8704 MiB"),
        Neighbours(host.env(), plans, "x", meminfo=PLENTY),
    ):
        pass
    assert host.log == []


def test_start_in_order_pinned_then_stop_then_tear_down_in_reverse():
    host = Host()
    plans = [NeighbourPlan(f"neighbour-{i}", NATIVE, idle, cpus=[i]) for i in (1, 2, 3)]
    with Neighbours(host.env(), plans, settle_s=0, meminfo=PLENTY) as group:
        assert group.platform("neighbour-2") is host.platforms["neighbour-2"]
        assert group.exited() == {}
    assert [host.platforms[f"neighbour-{i}"].spawned for i in (1, 2, 3)] == [
        [(IDLE_ARGV, [1])],
        [(IDLE_ARGV, [2])],
        [(IDLE_ARGV, [3])],
    ]
    # every environment is provisioned before any command starts loading the host
    assert host.log == [
        "up neighbour-1",
        "up neighbour-2",
        "up neighbour-3",
        "spawn neighbour-1",
        "spawn neighbour-2",
        "spawn neighbour-3",
        "stop neighbour-1",
        "stop neighbour-2",
        "stop neighbour-3",
        "down neighbour-3",
        "down neighbour-2",
        "down neighbour-1",
    ]
    assert [n.plan.role for n in group.finished] == ["neighbour-1", "neighbour-2", "neighbour-3"]


def test_a_neighbour_failing_to_provision_names_itself_and_tears_down_the_others():
    host = Host(fail_up=("neighbour-3",))
    plans = [NeighbourPlan(f"neighbour-{i}", NATIVE, idle) for i in (1, 2, 3, 4)]
    with (
        pytest.raises(
            VirtbenchError,
            match=r"scenario 'idle-neighbours:4': neighbour-3 on platform 'native' failed to "
            r"start: boom; torn down: neighbour-1, neighbour-2$",
        ),
        Neighbours(host.env(), plans, "idle-neighbours:4", settle_s=0, meminfo=PLENTY),
    ):
        pass
    assert host.log == ["up neighbour-1", "up neighbour-2", "down neighbour-2", "down neighbour-1"]


def test_a_command_failing_to_start_names_its_neighbour_and_tears_down_all():
    host = Host(fail_spawn=("neighbour-2",))
    plans = [NeighbourPlan(f"neighbour-{i}", NATIVE, idle) for i in (1, 2, 3)]
    with (
        pytest.raises(
            VirtbenchError,
            match=r"neighbour-2 on platform 'native' failed to start: cannot spawn; "
            r"torn down: neighbour-1, neighbour-3$",
        ),
        Neighbours(host.env(), plans, "x", settle_s=0, meminfo=PLENTY),
    ):
        pass
    assert host.log[-4:] == [
        "stop neighbour-1",
        "down neighbour-3",
        "down neighbour-2",
        "down neighbour-1",
    ]


def test_commands_can_wait_until_the_caller_has_set_the_scene():
    host = Host()
    plans = [NeighbourPlan("neighbour-1", NATIVE, idle)]
    group = Neighbours(host.env(), plans, settle_s=0, meminfo=PLENTY, commands_on_enter=False)
    with group:
        assert host.log == ["up neighbour-1"]
        group.start_commands()
        assert host.log == ["up neighbour-1", "spawn neighbour-1"]
    assert host.log[-2:] == ["stop neighbour-1", "down neighbour-1"]


def test_interrupt_while_starting_tears_down_what_was_started():
    host = Host()
    calls = []

    def argv(platform):
        calls.append(platform.role)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return ["load"]

    plans = [NeighbourPlan(f"neighbour-{i}", NATIVE, argv) for i in (1, 2)]
    with pytest.raises(KeyboardInterrupt), Neighbours(host.env(), plans, meminfo=PLENTY):
        pass
    assert host.log[-2:] == ["down neighbour-2", "down neighbour-1"]


def test_health_check_names_the_neighbour_that_exited():
    host = Host()
    plans = [NeighbourPlan(f"neighbour-{i}", NATIVE, idle) for i in (1, 2)]
    with Neighbours(host.env(), plans, settle_s=0, meminfo=PLENTY) as group:
        host.platforms["neighbour-2"].dead.set()
        assert list(group.exited()) == ["neighbour-2"]
        with pytest.raises(WorkloadError, match=r"neighbour-2 on neighbour-2 exited early"):
            group.check_alive()
    assert host.log[-2:] == ["down neighbour-2", "down neighbour-1"]


def test_deferred_neighbours_start_later_and_are_torn_down_with_the_group():
    host = Host(fail_exec=("neighbour-2",))
    plans = [
        NeighbourPlan("neighbour-1", NATIVE),
        NeighbourPlan("neighbour-2", NATIVE, deferred=True),
    ]
    with Neighbours(host.env(), plans, settle_s=0, meminfo=PLENTY) as group:
        assert host.log == ["up neighbour-1"]  # no command: the caller runs its workload
        with pytest.raises(VirtbenchError, match="first command failed: no shell"):
            group.start(group.plan("neighbour-2"), ready=True)
    assert host.log == ["up neighbour-1", "up neighbour-2", "down neighbour-2", "down neighbour-1"]


class Ops(Workload):
    suite = "cpu"
    name = "fake-ops"
    description = "returns a constant"
    metrics = (Metric("ops", "ops/s", True, primary=True),)
    params = {"rate": Param(0)}

    def run(self, platform, ctx):
        return [self.sample("ops", 100.0, on=platform.name)]


def test_antagonists_go_through_the_layer_with_roles_pins_and_labels():
    host = Host()
    scenario = registry.parse("antagonist:stress-ng-cpu:affinity:2:cpu=0")
    samples = scenario.run(host.env(Ops()))
    # stress-ng printed nothing here: its neighbour samples are kept, flagged invalid
    by_role = {s.role: s for s in samples}
    assert set(by_role) == {"target", "neighbour-1", "neighbour-2"}
    assert by_role["target"].labels["placement"] == "affinity"
    assert by_role["target"].labels["antagonists"] == 2
    assert "invalid" in by_role["neighbour-1"].labels
    assert host.platforms["neighbour-1"].spawned[0][1] == by_role["neighbour-1"].labels["cpus"]
    assert host.log[-2:] == ["down neighbour-2", "down neighbour-1"]


def test_idle_neighbours_go_through_the_layer_and_a_dead_one_invalidates_the_cell():
    host = Host()
    env = host.env(Ops(), {"rate": 0})

    class DiesMidRun(Ops):
        def run(self, platform, ctx):
            host.platforms["neighbour-1"].dead.set()
            return super().run(platform, ctx)

    env.workload = DiesMidRun()
    samples = registry.parse("idle-neighbours:2").run(env)
    ops = next(s for s in samples if s.metric == "ops")
    assert ops.role == "target"
    assert "neighbour-1 on neighbour-1 exited early" in ops.labels["invalid"]
    assert [line for line in host.log if line.startswith("spawn")] == [
        "spawn neighbour-1",
        "spawn neighbour-2",
    ]
    assert host.log[-2:] == ["down neighbour-2", "down neighbour-1"]


class SlowHost(Host):
    """`new_platform` of `slow` blocks until `release` is set (a VM still booting); with
    `release_on_down`, that role's teardown sets it (the boot ends during the group's exit,
    ordered by the exit itself rather than by a timer that a loaded machine may outrun)."""

    def __init__(self, slow: str, release_on_down: str | None = None) -> None:
        super().__init__()
        self.slow, self.release_on_down = slow, release_on_down
        self.provisioning, self.release = threading.Event(), threading.Event()

    @contextlib.contextmanager
    def new_platform(self, spec, role):
        if role == self.slow:
            self.provisioning.set()
            assert self.release.wait(timeout=10)
        try:
            with super().new_platform(spec, role) as p:
                yield p
        finally:
            if role == self.release_on_down:
                self.release.set()


def test_a_start_still_provisioning_when_the_group_closes_is_torn_down_before_exit_returns():
    """Ctrl-C while a storm thread is inside `start()`: the group's teardown must not return
    (and let virtbench exit) while that environment is still being made, and what it made
    must not outlive the group (before: pushed onto the closed stack, never torn down)."""
    host = SlowHost("neighbour-2", release_on_down="neighbour-1")
    plans = [
        NeighbourPlan("neighbour-1", NATIVE),
        NeighbourPlan("neighbour-2", NATIVE, deferred=True),
    ]
    errors: list[BaseException] = []

    def start(group: Neighbours) -> None:
        try:
            group.start(group.plan("neighbour-2"))
        except BaseException as exc:  # noqa: BLE001 - the test reads it
            errors.append(exc)

    with pytest.raises(KeyboardInterrupt), Neighbours(host.env(), plans, meminfo=PLENTY) as group:
        th = threading.Thread(target=start, args=(group,), daemon=True)
        th.start()
        assert host.provisioning.wait(timeout=10)
        # the boot ends during the teardown: once neighbour-1 is down (the group is closed)
        raise KeyboardInterrupt
    assert host.log.count("up neighbour-2") == host.log.count("down neighbour-2") == 1
    th.join(timeout=10)
    assert [type(e) for e in errors] == [VirtbenchError]  # the storm records a failed start
    # a start that begins after the group closed provisions nothing
    with pytest.raises(VirtbenchError, match="neighbour-2 .* the group was closed"):
        group.start(group.plan("neighbour-2"))
    assert host.log.count("up neighbour-2") == 1
