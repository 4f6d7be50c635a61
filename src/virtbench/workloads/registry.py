"""Workloads (test cases) by name and by suite (suites.py: each suite's facts). Modules register
themselves on import."""

from __future__ import annotations

from .. import plugins
from .base import Workload

WORKLOADS: dict[str, type[Workload]] = {}


def register(cls: type[Workload]) -> type[Workload]:
    if cls.name in WORKLOADS:
        raise RuntimeError(f"duplicate workload name {cls.name}")
    WORKLOADS[cls.name] = cls
    return cls


def load_all() -> dict[str, type[Workload]]:
    plugins.load("virtbench.workloads", skip={"base", "registry"})
    return WORKLOADS


def by_suite(suite: str) -> list[type[Workload]]:
    load_all()
    return [w for w in WORKLOADS.values() if w.suite == suite]
