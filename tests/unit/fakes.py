"""Test doubles shared by the scenario unit tests: a platform and a process that do nothing."""

from virtbench.platforms.base import Accounting, ExecResult, Platform, PlatformSpec, Process


class FakeProcess(Process):
    def __init__(self):
        self.stopped = False

    @property
    def pid(self):
        return None

    def poll(self):
        return None if not self.stopped else 0

    def stop(self, timeout=5.0):
        self.stopped = True
        return ExecResult([], 0, "", "", 0.0)


class FakePlatform(Platform):
    kind = "fake"
    description = "test double"

    def __init__(self, name, log):
        super().__init__(PlatformSpec(name, "native"), "vb-test")
        self.log = log

    def provision(self):
        pass

    def teardown(self):
        pass

    def exec(self, argv, *, cpus=None, timeout=None, env=None):
        return ExecResult(argv, 0, "", "", 0.0)

    def spawn(self, argv, *, cpus=None, env=None):
        return FakeProcess()

    def endpoint(self, port):
        return ("127.0.0.1", port)

    @property
    def workdir(self):
        return "/tmp"

    def accounting(self):
        return Accounting()


def dead_pid() -> tuple[int, str]:
    """A PID and start time of a process that has exited: an owner that is gone."""
    import subprocess

    from virtbench import ownedtmp

    p = subprocess.Popen(["sleep", "30"])
    start = ownedtmp.process_start_time(p.pid)
    assert start is not None
    p.kill()
    p.wait()
    return p.pid, start
