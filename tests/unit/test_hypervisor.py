"""The hypervisor fingerprint (hostinfo.hypervisor): one name per host from systemd-detect-virt,
the CPUID hypervisor leaf, DMI and Xen's guest type; and how compare weighs it."""

from __future__ import annotations

import pytest

from virtbench import hostinfo
from virtbench.analysis import fingerprint


@pytest.mark.parametrize(
    ("detect", "signature", "dmi", "pvm", "xen", "name"),
    [
        ("kvm", "KVMKVMKVM", "QEMU Standard PC", False, None, "kvm"),
        ("kvm", "KVMKVMKVM", "", True, None, "pvm"),  # PVM answers as KVM: its leaf decides
        ("xen", None, "", False, "PV", "xen"),
        (None, "XenVMMXenVMM", "Xen HVM domU", False, "HVM", "xen"),
        (None, "VMwareVMware", "VMware, Inc. VMware7,1", False, None, "vmware"),  # ESXi
        (None, "Microsoft Hv", "Microsoft Corporation Virtual Machine", False, None, "microsoft"),
        (None, None, "Microsoft Corporation Virtual Machine", False, None, "microsoft"),
        (None, None, "", False, "PV", "xen"),  # PV: no CPUID leaf, /sys/hypervisor says
        ("none", None, "Dell Inc. PowerEdge R640", False, None, "none"),
        (None, "NewVisorAbc", "", False, None, "newvisorabc"),  # unknown: its own words
    ],
)
def test_one_name_per_hypervisor(detect, signature, dmi, pvm, xen, name):
    assert hostinfo.classify(detect, signature, dmi, pvm, xen) == name


def test_this_host_is_fingerprinted_with_its_evidence():
    facts = hostinfo.hypervisor()
    ev = facts["hypervisor_evidence"]
    assert set(ev) >= {"systemd_detect_virt", "cpuid_signature", "dmi_vendor", "paravirt_devices"}
    if ev["cpuid_signature"] in hostinfo.CPUID_VENDORS:
        assert facts["hypervisor"] in (hostinfo.CPUID_VENDORS[ev["cpuid_signature"]], "pvm")
    assert all(isinstance(d, str) for d in ev["paravirt_devices"])


def test_fleet_host_name_is_a_fact(monkeypatch):
    monkeypatch.setenv(hostinfo.FLEET_HOST_ENV, "esxi-07")
    facts = hostinfo.facts([])
    assert facts["fleet_host"] == "esxi-07" and "hypervisor" in facts


def test_hypervisor_matters_only_when_both_runs_know_it():
    a = {"cpu_model": "x", "hypervisor": "xen"}
    gate = fingerprint.compare(a, a | {"hypervisor": "vmware"})
    assert [d.key for d in gate.mattering] == ["hypervisor"]
    old = {"cpu_model": "x"}  # stored before issue 14
    gate = fingerprint.compare(old, a)
    assert not any("hypervisor" in u for u in gate.unknown)
    assert not any(d.key == "hypervisor" for d in gate.differences)
