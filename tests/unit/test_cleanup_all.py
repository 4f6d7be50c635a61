"""Issue 41: the cleaner registry (`cleanup`, bottom level) and the runner that loads and runs
every cleaner (`cleanup_all`, top level) are two modules; the runner still finds them all."""

from __future__ import annotations

from virtbench import cleanup, cleanup_all

EVERY_CLEANER = {
    "private temporary files",
    "cache staging directories",
    "image builds",
    "container storage",
    "tuned host settings",
    "network",
    "docker",
    "cgroups",
    "containers",
    "native processes and workdirs",
    "vm image seeds",
    "vm",
    "scheduler quantum",
    "host run registrations",
}


def _load() -> None:
    # what run_all loads first; loaded here so that no real cleaner registers into (and is
    # run from) a test's replacement list
    cleanup_all.platform_registry.load_all()
    cleanup_all.scenario_registry.load_all()


def test_the_runner_loads_every_module_that_registers_a_cleaner():
    _load()
    names = [what for what, _ in cleanup.CLEANERS]
    assert set(names) == EVERY_CLEANER and len(names) == len(EVERY_CLEANER)


def test_run_all_runs_each_cleaner_past_a_failing_one_then_drops_dead_claims(monkeypatch):
    _load()
    calls: list[str] = []

    def fails() -> list[str]:
        calls.append("fails")
        raise OSError("busy")

    monkeypatch.setattr(
        cleanup,
        "CLEANERS",
        [("first", fails), ("second", lambda: calls.append("second") or ["removed x"])],
    )
    monkeypatch.setattr(cleanup, "drop_dead_claims", lambda: calls.append("claims"))
    assert cleanup_all.run_all() == ["! first: busy", "removed x"]
    assert calls == ["fails", "second", "claims"]
