"""Scenario kinds by name; `parse("idle-neighbours:3")` builds a validated instance."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .. import plugins

if TYPE_CHECKING:
    # annotations only: `cleanup_all` imports this registry before it loads the platforms,
    # and base's imports would register the cgroups cleaner ahead of theirs
    from .base import Scenario

SCENARIOS: dict[str, type[Scenario]] = {}


def register(cls: type[Scenario]) -> type[Scenario]:
    SCENARIOS[cls.kind] = cls
    return cls


def load_all() -> dict[str, type[Scenario]]:
    plugins.load("virtbench.scenarios", skip={"base", "registry"})
    return SCENARIOS


def parse(text: str) -> Scenario:
    load_all()
    kind, *args = text.split(":")
    if kind not in SCENARIOS:
        raise ValueError(f"unknown scenario '{kind}'")
    return SCENARIOS[kind](args)


def describe_allowed() -> list[str]:
    return [cls.usage for cls in load_all().values()]
