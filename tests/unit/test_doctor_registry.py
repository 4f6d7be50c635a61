"""Doctor's checks register where the knowledge is, like cleaners: platform and engine
modules register theirs, doctor.py runs them in order and imports no platform."""

import ast
from pathlib import Path

from virtbench import doctor, doctor_registry
from virtbench.doctor_registry import Check, Registered
from virtbench.platforms import registry


def test_platform_modules_register_their_own_checks_in_doctors_order():
    registry.load_all()
    ordered = sorted(doctor_registry.CHECKS, key=lambda r: r.order)
    modules = [r.fn.__module__.removeprefix("virtbench.") for r in ordered]
    assert modules == [
        "doctor",  # root
        "doctor",  # cgroups
        "doctor",  # host virtualization
        "doctor",  # background load
        "platforms.vm.accel",  # kvm
        "doctor",  # tcp stack
        "platforms.container.gvisor",
        "platforms.container.lxc",
        "platforms.container.dockerd",
    ]


def test_doctor_imports_no_platform_internals():
    tree = ast.parse(Path(doctor.__file__).read_text())
    imported = {
        node.module or ""
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("platforms")
    }
    assert imported <= {"platforms"}  # only the registry's loader (`from .platforms import`)


def test_root_only_checks_are_skipped_without_root(monkeypatch):
    said = [Check("a", "ok", "for all"), Check("b", "ok", "root only")]
    fake = [Registered(1, lambda: said[0], False), Registered(2, lambda: said[1], True)]
    monkeypatch.setattr(doctor_registry, "CHECKS", fake)
    monkeypatch.setattr(registry, "load_all", lambda: {})
    monkeypatch.setattr(doctor, "tool_checks", lambda: [])
    monkeypatch.setattr(doctor, "is_root", lambda: False)
    assert doctor.checks() == said[:1]
    monkeypatch.setattr(doctor, "is_root", lambda: True)
    assert doctor.checks() == said
