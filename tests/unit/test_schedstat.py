"""Scheduler/resource/host-work parsers against real /proc, /sys and cgroup v1 files.

tests/data/colocation/snap1 and snap2 were captured one second apart by capture.py from a
2-thread sysbench (PID 18206) in a vb- cgroup and a shell (PID 18207) with a child.
"""

from pathlib import Path

import pytest

from virtbench import procfs
from virtbench.metrics import hostwork, resources, schedstat
from virtbench.platforms.base import Accounting

DATA = Path(__file__).parent.parent / "data" / "colocation"
S1, S2 = DATA / "snap1", DATA / "snap2"
SYSBENCH, SHELL = 18206, 18207


def test_parse_schedstat_and_switches():
    assert schedstat.parse_schedstat((S1 / "proc/18285/schedstat").read_text()) == (
        239126073,
        1156661378,
        516,
    )
    status = (S1 / "proc/18206/task/18285/status").read_text()
    assert schedstat.parse_switches(status) == (1, 515)


def test_tasks_from_pids_and_cgroup_agree():
    by_pid = schedstat.tasks_of(Accounting(pids=[SYSBENCH]), S1)
    by_cgroup = schedstat.tasks_of(
        Accounting(cgroups={"cpuacct": "/sys/fs/cgroup/cpuacct/vb-capture"}), S1
    )
    assert sorted(by_pid) == sorted(by_cgroup) == [18206, 18285, 18286]
    # explicit threads (vCPU threads of a VM) win over everything else
    assert schedstat.tasks_of(Accounting(pids=[SYSBENCH], threads=[18285]), S1) == [18285]


def test_descendants_follow_children_files():
    assert procfs.descendants([SHELL], S1) == [SHELL, 18212]


def test_rates_hand_computed():
    acct = Accounting(pids=[SYSBENCH])
    a = schedstat.snapshot(acct, 10.0, S1)
    b = schedstat.snapshot(acct, 11.0, S2)
    r = {k: v for k, (v, _unit) in schedstat.rates(a, b).items()}
    # /proc/TID/schedstat: d_run = 175338932 + 168271848 ns,
    # d_wait = 875709264 + 855718110 ns (TID 18206 did not run), 3 tasks, 1 s
    assert r["sched_run_pct"] == pytest.approx(100 * 343610780 / 3e9)
    assert r["sched_wait_pct"] == pytest.approx(100 * 1731427374 / 3e9)
    assert r["sched_blocked_pct"] == pytest.approx(100 - 11.4536927 - 57.7142458, abs=1e-5)
    assert r["exe_per_s"] == 294 + 115
    assert r["cpu_us_per_exe"] == pytest.approx(343610.780 / 409)
    assert r["invol_switches_per_s"] == 294 + 115
    assert r["vol_switches_per_s"] == 0
    assert r["tasks"] == 3
    assert r["task_cpu_util"] == pytest.approx(100 * 343610780 / 1e9)


def test_rates_ignore_tasks_that_exited_or_appeared():
    a = schedstat.SchedSnapshot(0.0, {1: schedstat.TaskStat(0, 0, 0, 0, 0)})
    b = schedstat.SchedSnapshot(2.0, {2: schedstat.TaskStat(10**9, 0, 5, 0, 0)})
    assert schedstat.rates(a, b) == {}


def test_resources_cgroup_v1_and_proc():
    cg = Accounting(
        cgroups={
            "memory": "/sys/fs/cgroup/memory/vb-capture",
            "blkio": "/sys/fs/cgroup/blkio/vb-capture",
        },
        net_ifaces=["lo"],
    )
    snap = resources.snapshot(cg, 0.0, S1)
    assert snap.mem_bytes == 2682880
    assert snap.disk == (0, 0)  # blkio 'Total 0': this virtual disk is not accounted
    assert snap.net == {
        "rx_bytes": 153218529,
        "tx_bytes": 153218529,
        "rx_packets": 528514,
        "tx_packets": 528514,
    }
    # no cgroup: /proc/PID/io (dd wrote 200 x 64 KiB with O_DIRECT before exec'ing sysbench)
    by_pid = resources.snapshot(Accounting(pids=[SYSBENCH]), 0.0, S1)
    assert by_pid.disk == (90112, 13119488)
    assert by_pid.net is None
    assert by_pid.mem_bytes > 0


def test_resource_rates():
    a = resources.ResourceSnapshot(0.0, dict.fromkeys(resources.NET_COUNTERS, 0), (0, 0), 0)
    b = resources.ResourceSnapshot(
        2.0, {"rx_bytes": 2000, "tx_bytes": 4000, "rx_packets": 2, "tx_packets": 4}, (10, 20), 2**21
    )
    r = resources.rates(a, b)
    assert r["net_rx_bytes_per_s"] == (1000.0, "B/s")
    assert r["net_tx_packets_per_s"] == (2.0, "packets/s")
    assert r["disk_write_bytes_per_s"] == (10.0, "B/s")
    assert r["mem_mib"] == (2.0, "MiB")


def test_cgroup_v2_io_stat_format():
    # format from the kernel's Documentation/admin-guide/cgroup-v2.rst (this host has no v2 io)
    text = "8:16 rbytes=1459200 wbytes=314773504 rios=192 wios=353 dbytes=0 dios=0\n"
    assert resources.parse_io_stat(text) == (1459200, 314773504)


def test_hostwork_hand_computed():
    a = hostwork.snapshot(0.0, [], S1)
    b = hostwork.snapshot(1.0, [], S2)
    r = hostwork.rates(a, b, ncpus=2)
    # softirq ticks 275 -> 276 out of 88794 -> 89000 total ticks, 2 CPUs
    assert r["softirq_pct"][0] == pytest.approx(100 * 2 * 1 / 206)
    assert r["net_softirqs_per_s"][0] == 440
    assert r["ksoftirqd_util"][0] == 0


def test_vm_backend_threads_are_the_unnamed_ones():
    # a VM names its vCPU threads; the other threads of its process are QEMU's back ends
    acct = Accounting(pids=[SYSBENCH], threads=[18285])
    assert sorted(procfs.other_threads(acct.pids, acct.threads, S1)) == [18206, 18286]
    assert procfs.other_threads([SYSBENCH], [], S1) == []
    a = schedstat.run_ns([18206, 18286], S1)
    b = schedstat.run_ns([18206, 18286], S2)
    # 18286 ran 168271848 ns in the second, 18206 not at all
    assert schedstat.run_util(a, b, 1.0) == pytest.approx(100 * 168271848 / 1e9)
    assert schedstat.run_util(a, {}, 1.0) is None


def test_net_counters_are_the_environments_view(tmp_path):
    # the host end of a veth/tap receives what the environment sends
    stats = tmp_path / "sys/class/net/vb-tap0/statistics"
    stats.mkdir(parents=True)
    for name, value in {
        "rx_bytes": 9000,
        "tx_bytes": 100,
        "rx_packets": 9,
        "tx_packets": 1,
    }.items():
        (stats / name).write_text(f"{value}\n")
    net = resources.read_net(["vb-tap0"], tmp_path)
    assert net == {"tx_bytes": 9000, "rx_bytes": 100, "tx_packets": 9, "rx_packets": 1}


def test_memory_of_a_vm_without_a_cgroup_is_its_processes_rss():
    """The schedstat snapshot of a VM reads its named (vCPU) threads only, so the VmRSS it
    saw is theirs; the memory of its process must not be looked up there (it read 0 MiB)."""
    acct = Accounting(pids=[SYSBENCH], threads=[18285])
    sched = schedstat.snapshot(acct, 0.0, S1)
    procs = procfs.descendants(acct.pids, S1)
    snap = resources.snapshot(acct, 0.0, S1, procs=procs, rss_kb=sched.rss_kb)
    rss_kb = resources.parse_rss_kb((S1 / f"proc/{SYSBENCH}/status").read_text())
    assert rss_kb > 0 and snap.mem_bytes == rss_kb * 1024
