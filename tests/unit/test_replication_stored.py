"""Replication on small real stored runs (tests/data/replication): every quantity recomputed
by hand from the run's exported samples (the export contract), and the verdicts it gives."""

import gzip
import json
import math
import shutil
import statistics
from pathlib import Path

import pytest

from virtbench import export
from virtbench.replication import compute, curves, load
from virtbench.report.data import ReportData
from virtbench.store.db import Store

DATA = Path(__file__).parent.parent / "data" / "replication"


def _open(tmp_path, name):
    db = tmp_path / "virtbench.db"
    with gzip.open(DATA / name) as src, db.open("wb") as dst:
        shutil.copyfileobj(src, dst)
    st = Store(db)
    return st, st.runs()[0]["run_id"]


def _target_mean(rows, platform, test, metric, **labels):
    """The mean of the export's valid target values of one platform's metric (label filters)."""
    return statistics.fmean(
        r["value"]
        for r in rows
        if (r["platform"], r["test_case"], r["metric"]) == (platform, test, metric)
        and r["role"] == "target"
        and r["valid"]
        and all(r["labels"].get(k) == v for k, v in labels.items())
    )


def _by_hand(rows, finding, side, platform, test, primary="requests_per_s"):
    """Per repetition, the sum over the side's roles of the valid exported values."""
    dims = dict(finding.dims) | dict(side.dims)
    metric = finding.metric or primary
    per_role = []
    for role in side.roles:
        per_role.append(
            {
                r["repetition"]: r["value"]
                for r in rows
                if r["platform"] == (side.platform or platform)
                and r["test_case"] == test
                and r["scenario"] == side.scenario
                and r["role"] == role
                and r["metric"] == metric
                and r["valid"]
                and all(r["labels"].get(k) == v for k, v in dims.items())
            }
        )
    reps = set.intersection(*(set(p) for p in per_role))
    return [sum(p[k] for p in per_role) for k in sorted(reps)]


def test_seed003_reduced_run_by_hand(tmp_path):
    st, run = _open(tmp_path, "seed003-consolidation-reduced.db.gz")
    rows = [json.loads(line) for line in export.to_jsonl(st, run).splitlines()]
    seed = load.load("003")
    results = {r.finding.id: r for r in compute.evaluate(ReportData.load(st, run), seed.findings)}
    checked = 0
    for r in results.values():
        if r.ratio is None:
            continue
        f = r.finding
        x = _by_hand(rows, f, f.x, r.platform, "wrk-max")
        b = _by_hand(rows, f, f.base, r.platform, "wrk-max")
        assert r.ratio.value == pytest.approx(statistics.fmean(x) / statistics.fmean(b)), f.id
        checked += 1
    assert checked == 4
    verdicts = {k: r.verdict for k, r in results.items()}
    assert verdicts == {
        "table2-idle-1kb": "partly",  # -6.6%, the paper's size, but its CI reaches past ±2%
        "table2-idle-70kb": "does not",  # -10.1%, decided: the paper saw 0% at 70 kB
        "fig18-1kb-beside-70kb": "does not",  # -5.9%, undecided: the paper saw +34%
        "fig15-identical-pair": "partly",
        "fig24-dom0-weight": "not measured",  # no weights scenario in this run
        "fig21-many-guests-cpu": "not measured",
    }


def test_seed003_network_bound_size_says_what_it_moved_here(tmp_path):
    st, run = _open(tmp_path, "seed003-consolidation-reduced.db.gz")
    f = next(f for f in load.load("003").findings if f.id == "table2-idle-70kb")
    r = compute.evaluate(ReportData.load(st, run), (f,))[0]
    rows = [json.loads(line) for line in export.to_jsonl(st, run).splitlines()]
    solo = [
        x["value"]
        for x in rows
        if x["scenario"] == "solo"
        and x["role"] == "target"
        and x["metric"] == "requests_per_s"
        and x["labels"].get("file_size_kb") == 70
    ]
    gbit = statistics.fmean(solo) * 70 * 1024 * 8 / 1e9
    assert f"= {gbit:.2f} Gbit/s, above it" in r.reason and "0.1 Gbit/s link" in r.reason


def test_seed003_idle_cost_says_what_the_cpu_bought_alone_and_beside_them(tmp_path):
    """The 70 kB "does not" carries the measured mechanism: idle neighbours at 0 % CPU, the
    target at its same budget serving fewer requests per CPU-second (issue 38)."""
    st, run = _open(tmp_path, "seed003-consolidation-reduced.db.gz")
    f = next(f for f in load.load("003").findings if f.id == "table2-idle-70kb")
    r = compute.evaluate(ReportData.load(st, run), (f,))[0]
    rows = [json.loads(line) for line in export.to_jsonl(st, run).splitlines()]

    def mean(scenario, metric, role="target"):
        return statistics.fmean(
            x["value"]
            for x in rows
            if x["scenario"] == scenario
            and x["role"] == role
            and x["metric"] == metric
            and x["valid"]
            and x["labels"].get("file_size_kb") == 70
        )

    idle, solo = "idle-neighbours:3", "solo"
    cpu_x, cpu_b = mean(idle, "cpu_util"), mean(solo, "cpu_util")
    us_x = cpu_x / 100 * 1e6 / mean(idle, "requests_per_s")
    us_b = cpu_b / 100 * 1e6 / mean(solo, "requests_per_s")
    assert us_x > 1.05 * us_b  # the same CPU bought fewer requests beside the idle ones
    assert f"the target used {cpu_x:.1f} % CPU beside them (alone {cpu_b:.1f} %)" in r.reason
    assert f"{us_x:.0f} vs {us_b:.0f} µs CPU per request" in r.reason
    assert "the 3 idle neighbours used 0.0-0.0 % CPU" in r.reason
    vol = mean(idle, "vol_switches_per_s")
    assert f"it slept {vol:,.0f}/s" in r.reason
    # stored before budgets said their weight: the reason says what it was then
    assert "stored before budgets recorded their weight" in r.reason
    assert r.reason.endswith("its CPU budget: 50 % of one CPU")  # at it alone and beside them


def test_seed003_neighbour_of_the_other_size_says_what_it_moved(tmp_path):
    """Fig. 18-19's reason: the 70 kB neighbour's own rate as Gbit/s over the bridge (the
    paper's was held by its 100 Mbps NIC) and its CPU against the same-size neighbour's."""
    st, run = _open(tmp_path, "seed003-consolidation-reduced.db.gz")
    f = next(f for f in load.load("003").findings if f.id == "fig18-1kb-beside-70kb")
    r = compute.evaluate(ReportData.load(st, run), (f,))[0]
    rows = [json.loads(line) for line in export.to_jsonl(st, run).splitlines()]

    def mean(scenario, metric, size):
        return statistics.fmean(
            x["value"]
            for x in rows
            if x["scenario"] == scenario
            and x["role"] == "neighbour-1"
            and x["metric"] == metric
            and x["valid"]
            and x["labels"].get("file_size_kb") == size
        )

    # the 70 kB neighbour's runs beside the 1 kB target: its rows of that lockstep step
    rate = statistics.fmean(
        x["value"]
        for x in rows
        if x["scenario"] == "different:70"
        and x["role"] == "neighbour-1"
        and x["metric"] == "requests_per_s"
        and x["valid"]
        and x["labels"].get("lockstep_step") == 0  # the target served 1 kB at step 0
    )
    gbit = rate * 70 * 1024 * 8 / 1e9
    assert f"the 70 KB neighbour served {rate:,.0f} req/s = {gbit:.2f} Gbit/s" in r.reason
    cpu, same = mean("different:70", "cpu_util", 1), mean("identical", "cpu_util", 1)
    assert f"using {cpu:.1f} % CPU (the same-size neighbour {same:.1f} %)" in r.reason


def test_seed003_idle_neighbours_lending_no_weight_by_hand(tmp_path):
    """Run 20261129-100837-982f, with idle neighbours lending the target no weight: its budget
    weighed 1024 alone and beside them, and the 70 kB "does not" (-10.1 % in the run before)
    became -2.6 %, undecided, inside the paper's band."""
    st, run = _open(tmp_path, "seed003-idle-weight.db.gz")
    rows = [json.loads(line) for line in export.to_jsonl(st, run).splitlines()]
    seed = load.load("003")
    results = {r.finding.id: r for r in compute.evaluate(ReportData.load(st, run), seed.findings)}
    weights = {
        x["labels"].get("cpu_budget_weight")
        for x in rows
        if x["role"] == "target" and x["metric"] == "requests_per_s"
    }
    assert weights == {"cpu.shares 1024"}
    for fid in ("table2-idle-1kb", "table2-idle-70kb"):
        r = results[fid]
        f = r.finding
        x = _by_hand(rows, f, f.x, r.platform, "wrk-max")
        b = _by_hand(rows, f, f.base, r.platform, "wrk-max")
        assert len(x) == len(b) == 3
        assert r.ratio.value == pytest.approx(statistics.fmean(x) / statistics.fmean(b)), fid
        assert "its budget weighed cpu.shares 1024 beside them (alone cpu.shares 1024)" in r.reason
    assert results["table2-idle-70kb"].verdict == "partly"
    assert 0.97 <= results["table2-idle-70kb"].ratio.value <= 1.03


def test_seed003_dom0_weight_on_the_vms_back_ends_by_hand(tmp_path):
    """Run 20261129-100944-d0df: the back-end (Dom0) weight on two TCG guests' QEMU back-end
    threads, 2:1:1 against 0.5:1:1; the reason says what the back ends used against the share
    each weight gave them."""
    st, run = _open(tmp_path, "seed003-dom0-weight.db.gz")
    rows = [json.loads(line) for line in export.to_jsonl(st, run).splitlines()]
    f = next(f for f in load.load("003").findings if f.id == "fig24-dom0-weight")
    r = compute.evaluate(ReportData.load(st, run), (f,))[0]
    assert r.platform == "vm-virtio"
    x = _by_hand(rows, f, f.x, "vm-virtio", "wrk-max")
    b = _by_hand(rows, f, f.base, "vm-virtio", "wrk-max")
    assert len(x) == len(b) == 3
    assert r.ratio.value == pytest.approx(statistics.fmean(x) / statistics.fmean(b))
    assert r.verdict == "partly"  # -13 %, the paper's direction, undecided

    def backends(scenario):
        return sum(
            statistics.fmean(
                v["value"]
                for v in rows
                if v["scenario"] == scenario
                and v["role"] == role
                and v["metric"] == "backend_cpu_util"
                and v["labels"].get("file_size_kb") == 10
            )
            for role in ("target", "neighbour-1")
        )

    assert f"weights:2:1:1: back ends {backends('weights:2:1:1'):.1f} % CPU (their weight's" in (
        r.reason
    )
    assert f"weights:0.5:1:1: back ends {backends('weights:0.5:1:1'):.1f} % CPU" in r.reason
    assert "share of the shared CPU 50 %" in r.reason and "shared CPU 20 %" in r.reason


def test_seed000_pairs_by_hand(tmp_path):
    """Run 20261129-101125-b4c8 (Fig. 6a's pairs at 1 KB, one repetition): HVM-PVM is not the
    best pair here, and the reason says what each pair's back ends used at its peak step."""
    st, run = _open(tmp_path, "seed000-pairs.db.gz")
    rows = [json.loads(line) for line in export.to_jsonl(st, run).splitlines()]
    seed = load.load("000")
    results = {r.finding.id: r for r in compute.evaluate(ReportData.load(st, run), seed.findings)}
    for fid in ("fig6-hvm-pvm-vs-hvm-hvm", "fig6-hvm-pvm-vs-pvm-pvm", "fig4-pvm-pair"):
        r = results[fid]
        f = r.finding
        x = _by_hand(rows, f, f.x, r.platform, "httperf-sweep", "peak_throughput")
        b = _by_hand(rows, f, f.base, r.platform, "httperf-sweep", "peak_throughput")
        assert len(x) == len(b) == 1
        assert r.ratio.value == pytest.approx(x[0] / b[0]), fid
    verdicts = {k: r.verdict for k, r in results.items()}
    assert verdicts["fig6-hvm-pvm-vs-hvm-hvm"] == "does not"  # -13.0 %: the paper saw +25 %
    assert verdicts["fig6-hvm-pvm-vs-pvm-pvm"] == "does not"  # -1.6 %: the paper saw +21 %
    assert verdicts["fig4-pvm-pair"] == "partly"  # +8.7 %, one repetition: no interval

    def at_peak(platform, scenario, role, metric):
        cell = {
            v["labels"]["peak_step"]
            for v in rows
            if v["platform"] == platform
            and v["scenario"] == scenario
            and v["role"] == "target"
            and v["metric"] == "peak_throughput"
        }
        (step,) = cell
        (value,) = [
            v["value"]
            for v in rows
            if v["platform"] == platform
            and v["scenario"] == scenario
            and v["role"] == role
            and v["metric"] == metric
            and v["labels"].get("step") == step
            and v["labels"].get("file_size_kb") == 1
        ]
        return value

    pairs = (
        ("vm-virtio", "heterogeneous:vm-e1000", "the mixed pair"),
        ("vm-e1000", "identical", "the vm-e1000 pair"),
    )
    for platform, scenario, what in pairs:
        be = [at_peak(platform, scenario, r, "backend_cpu_util") for r in ("target", "neighbour-1")]
        cpu = [at_peak(platform, scenario, r, "cpu_util") for r in ("target", "neighbour-1")]
        said = f"{what}: back ends {be[0]:.1f} + {be[1]:.1f} % of {cpu[0]:.1f} + {cpu[1]:.1f} % CPU"
        assert said in results["fig6-hvm-pvm-vs-hvm-hvm"].reason


def test_seed000_beside_a_100kb_neighbour_by_hand(tmp_path):
    """Run 20261129-101639-e079 (vm-virtio, one repetition): the 1 KB target does not gain
    beside a 100 KB neighbour, which is no lighter here: a TCG guest is CPU bound at 100 KB
    too (0.16 Gbit/s on a bridge with no NIC limit), and takes its half of the budget."""
    st, run = _open(tmp_path, "seed000-sizes.db.gz")
    rows = [json.loads(line) for line in export.to_jsonl(st, run).splitlines()]
    f = next(f for f in load.load("000").findings if f.id == "fig5-mixed-sizes")
    r = compute.evaluate(ReportData.load(st, run), (f,))[0]
    x = _by_hand(rows, f, f.x, "vm-virtio", "httperf-sweep", "peak_throughput")
    b = _by_hand(rows, f, f.base, "vm-virtio", "httperf-sweep", "peak_throughput")
    assert r.ratio.value == pytest.approx(x[0] / b[0]) and r.ratio.value < 1.0
    assert r.verdict == "does not"

    def headlines(role):
        return [
            v
            for v in rows
            if v["scenario"] == "different:100"
            and v["role"] == role
            and v["metric"] == "peak_throughput"
        ]

    # the neighbour's k-th 100 KB run ran beside the target's k-th size (both in stored order)
    k = [v["labels"]["file_size_kb"] for v in headlines("target")].index(1)
    rate = headlines("neighbour-1")[k]["value"]
    gbit = rate * 100 * 1024 * 8 / 1e9
    assert f"the 100 KB neighbour served {rate:,.0f} req/s = {gbit:.2f} Gbit/s" in r.reason


def test_seed000_idle_against_a_cold_solo_says_what_the_target_served_warm(tmp_path):
    """Run 20261129-101639-e079 has no warm-up and its solo cell ran first on a freshly booted
    TCG guest: idle neighbours read +9.7 % at 1 KB. The reason sets the idle figure against
    the same target alone measured later in the run (its solo-peak cells, same budget)."""
    st, run = _open(tmp_path, "seed000-sizes.db.gz")
    rows = [json.loads(line) for line in export.to_jsonl(st, run).splitlines()]
    results = {
        r.finding.id: r
        for r in compute.evaluate(ReportData.load(st, run), load.load("000").findings)
    }

    def peaks(scenario, size):
        return [
            v["value"]
            for v in rows
            if v["scenario"] == scenario
            and v["role"] == "target"
            and v["metric"] == "peak_throughput"
            and v["labels"].get("file_size_kb") == size
            and v["labels"].get("peak_cpu_limit") in (None, "cpu quota 100000 100000")
        ]

    for fid, size in (("fig3-idle-small", 1), ("fig3-idle-large", 50)):
        r = results[fid]
        (solo,), (idle,), (warm,) = (
            peaks("solo", size),
            peaks("idle-neighbours:3", size),
            peaks("solo-peak", size),
        )
        assert r.ratio.value == pytest.approx(idle / solo) and r.ratio.value > 1.05
        assert r.verdict == "does not"
        assert "the solo cell ran first after its target was provisioned, with no warm-up" in (
            r.reason
        )
        assert f"served {warm:,.0f} req/s, and beside the idle neighbours {idle / warm:.2f}" in (
            r.reason
        )


def test_seed000_idle_against_a_warm_solo_by_hand(tmp_path):
    """Run 20261129-111227-ad30: the guest warmed up once after its boot, two repetitions in a
    shuffled order. Idle guests cost the 1 KB target 5.6 % (undecided: partly); the reason
    no longer names a cold solo, and says the target slept more beside them."""
    st, run = _open(tmp_path, "seed000-idle-warm.db.gz")
    rows = [json.loads(line) for line in export.to_jsonl(st, run).splitlines()]
    results = {
        r.finding.id: r
        for r in compute.evaluate(ReportData.load(st, run), load.load("000").findings)
    }
    for fid in ("fig3-idle-small", "fig3-idle-large"):
        r = results[fid]
        f = r.finding
        x = _by_hand(rows, f, f.x, "vm-virtio", "httperf-sweep", "peak_throughput")
        b = _by_hand(rows, f, f.base, "vm-virtio", "httperf-sweep", "peak_throughput")
        assert len(x) == len(b) == 2
        assert r.ratio.value == pytest.approx(statistics.fmean(x) / statistics.fmean(b)), fid
        assert "no warm-up" not in r.reason
    small = results["fig3-idle-small"]
    assert small.verdict == "partly" and small.ratio.value < 0.95
    # the idle guests lent no weight: the budget weighed the same alone and beside them
    said = "its budget weighed cpu.shares 1024 beside them (alone cpu.shares 1024)"
    assert said in small.reason
    assert results["fig3-idle-large"].verdict == "does not"  # -10.5 %, one disturbed cell


def test_seed001_reduced_run_maxima_driven_by_stalls_decide_nothing(tmp_path):
    st, run = _open(tmp_path, "seed001-rt-latency-reduced.db.gz")
    rows = [json.loads(line) for line in export.to_jsonl(st, run).splitlines()]
    results = {
        r.finding.id: r
        for r in compute.evaluate(ReportData.load(st, run), load.load("001").findings)
    }

    def maxima(scenario):
        return {
            r["repetition"]: r["value"]
            for r in rows
            if r["platform"] == "container"
            and r["scenario"] == scenario
            and r["role"] == "target"
            and r["metric"] == "max_us"
            and r["valid"]
        }

    # by hand: scenario 6's round 2 maximum against the median of its other rounds
    s6 = maxima("antagonist:memory-load:free:3")
    others = statistics.median(v for k, v in s6.items() if k != 2)
    assert s6[2] >= 5 * others
    r = results["s6-vs-s5-memory-bus"]
    assert r.platform == "container" and r.ratio is not None
    assert r.ratio.value == pytest.approx(
        statistics.fmean(s6.values())
        / statistics.fmean(maxima("antagonist:cpu-load:free:3").values())
    )
    assert r.verdict == "not measured" and "one stall" in r.reason and "round 2" in r.reason
    # scenario 4's maximum is a stall the probe placed at no throttling boundary
    s4 = results["s4-vs-s3-cache"]
    assert s4.verdict == "not measured" and "at no throttling boundary" in s4.reason
    # ESXi: the host facts say kvm, before any platform is looked for (no vm in this run)
    esxi = results["esxi-last"]
    assert esxi.verdict == "not comparable here" and "hypervisor is 'kvm'" in esxi.reason
    assert results["xen-near-bare-metal"].verdict == "not measured"  # no vm in this run


def test_seed004_disk_score_by_hand(tmp_path):
    """The disk score: per measured point (fio-iozone's direct x phase x bs) the ratio of the
    means of the primary metric, then their geometric mean, as analysis/scores weighs them."""
    st, run = _open(tmp_path, "seed004-disk-reduced.db.gz")
    rows = [json.loads(line) for line in export.to_jsonl(st, run).splitlines()]
    results = {
        r.finding.id: r
        for r in compute.evaluate(ReportData.load(st, run), load.load("004").findings)
    }
    points: dict = {}
    for r in rows:
        if r["role"] == "target" and r["metric"] == "bandwidth_mib_s" and r["valid"]:
            lab = r["labels"]
            point = points.setdefault((lab["direct"], lab["phase"], lab["bs"]), {})
            point.setdefault(r["platform"], []).append(r["value"])
    for fid, platform in (("table5-aufs-disk", "metal.aufs"), ("table5-mnt-disk", "metal.mnt")):
        logs = [
            math.log(statistics.fmean(p[platform]) / statistics.fmean(p["metal.local"]))
            for p in points.values()
        ]
        assert len(logs) == 12
        assert results[fid].ratio.value == pytest.approx(math.exp(statistics.fmean(logs)))
    assert results["table5-aufs-disk"].verdict == "does not"  # -0.1%: no copy-on-write cost
    assert results["table5-mnt-disk"].verdict == "partly"


def test_seed002_reduced_run_by_hand(tmp_path):
    """Seed 002 on quick's cut (tests/data/replication/README.md): each measured ratio from the
    export's valid target samples by hand, the verdicts, and Fig. 4's curve per order."""
    st, run = _open(tmp_path, "seed002-quick-reduced.db.gz")
    rows = [json.loads(line) for line in export.to_jsonl(st, run).splitlines()]
    data = ReportData.load(st, run)
    results = {r.finding.id: r for r in compute.evaluate(data, load.load("002").findings)}

    def mean(platform, test, metric, **labels):
        return _target_mean(rows, platform, test, metric, **labels)

    by_hand = {
        "fig4-linpack-container": ("container", "hpcc-linpack", "hpl_gflops", {}),
        "fig5-memory-container": ("container", "mbw", "bandwidth_mib_s", {"method": "memcpy"}),
        "table2-tcp-rr-container": ("crun-bridge", "sockperf-tcp-rr", "rtt_mean_us", {}),
    }
    for fid, (platform, test, metric, labels) in by_hand.items():
        r = results[fid]
        assert r.platform == platform, fid
        want = mean(platform, test, metric, **labels) / mean("native", test, metric, **labels)
        assert r.ratio.value == pytest.approx(want), fid
    assert {k: r.verdict for k, r in results.items()} == {
        "fig4-linpack-container": "partly",  # -1.8%, in the paper's band, CI past ±2%
        "fig4-linpack-kvm": "not measured",  # no VM in this cut
        "fig5-memory-container": "partly",  # +1.3%, in the band, CI past ±2%
        "fig5-memory-kvm": "not measured",
        "table2-tcp-rr-container": "partly",  # +8.3%: the paper's direction, undecided
        "table2-tcp-rr-kvm": "not measured",
    }
    (fig4,) = [m for m in curves.measure(data, curves.load("002")) if m.points]
    assert [p.x for p in fig4.points] == [250.0, 500.0, 1000.0, 2000.0]
    for p in fig4.points:
        order = int(p.x)
        want = mean("container", "hpcc-linpack-sweep", "hpl_gflops", order=order) / mean(
            "native", "hpcc-linpack-sweep", "hpl_gflops", order=order
        )
        assert p.ratio.value == pytest.approx(want), order


def test_seed004_nat_paths_by_hand(tmp_path):
    """Seed 004's NAT vs host network for the application, the client on this host: through
    docker-proxy the ratio is decided and far from the paper's; through the kernel's DNAT (the
    paper's remote client's path) it is not. Each ratio by hand from the export."""
    st, run = _open(tmp_path, "seed004-nat-paths.db.gz")
    rows = [json.loads(line) for line in export.to_jsonl(st, run).splitlines()]
    results = {
        r.finding.id: r
        for r in compute.evaluate(ReportData.load(st, run), load.load("004").findings)
    }

    def mean(platform):
        return _target_mean(rows, platform, "daytrader-jmeter", "throughput")

    r = results["fig4-nat-vs-host-application"]
    assert r.ratio.value == pytest.approx(mean("metal.aufs.nat") / mean("metal.aufs.host"))
    assert r.verdict == "does not" and r.ratio.high < 0.9  # docker-proxy: decided, ~-39%
    assert "docker-proxy" in r.reason and "metal.aufs.nat.dnat" in r.reason
    dnat = mean("metal.aufs.nat.dnat") / mean("metal.aufs.host")
    assert f"{100 * (dnat - 1):+.1f}%" in r.reason  # the kernel's DNAT beside it, in the reason
