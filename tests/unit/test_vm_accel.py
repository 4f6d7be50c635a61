"""Accelerator choice: KVM only when the probe booted a guest; the verdict is cached."""

from __future__ import annotations

import pytest

from virtbench.errors import PlatformError
from virtbench.platforms.vm import accel


@pytest.fixture
def probe(monkeypatch):
    verdict = {"value": (False, "stalled")}
    monkeypatch.setattr(accel, "probe_kvm", lambda: verdict["value"])
    return verdict


def test_tcg_never_probes(monkeypatch):
    monkeypatch.setattr(accel, "probe_kvm", lambda: pytest.fail("probed"))
    used, why = accel.resolve("tcg")
    assert used == "tcg" and "binary translation" in why


def test_auto_falls_back_to_tcg(probe):
    used, why = accel.resolve("auto")
    assert used == "tcg" and "stalled" in why


def test_auto_uses_working_kvm(probe):
    probe["value"] = (True, "booted in 0.4 s")
    assert accel.resolve("auto")[0] == "kvm"


def test_kvm_requested_but_unusable_suggests_auto(probe):
    with pytest.raises(PlatformError, match='accel = "auto"'):
        accel.resolve("kvm")


def test_verdict_cache_round_trip(tmp_path, monkeypatch):
    monkeypatch.setattr(accel, "CACHE", tmp_path / "kvm-probe.json")
    assert accel._cached("k1") is None
    accel._store("k1", (False, "why"))
    assert accel._cached("k1") == (False, "why")
    assert accel._cached("k2") is None  # another boot, QEMU or kernel: probe again


def test_probe_argv_proves_init_via_debug_exit(tmp_path):
    argv = accel.probe_argv("vb-kvmprobe1", tmp_path / "k", tmp_path / "i")
    assert "isa-debug-exit,iobase=0xf4,iosize=0x04" in argv
    assert "q35,accel=kvm" in argv and any("panic=0" in a for a in argv)
