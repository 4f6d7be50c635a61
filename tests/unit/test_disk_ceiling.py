"""The host's disk ceiling judges O_DIRECT figures of every platform (native too), and a
configuration that does not honour O_DIRECT is flagged by mechanism whatever its figure.
Samples are made by the disk workload's own parser from captured fio JSON; the gVisor case
is issue 36's: an O_DIRECT sequential read at 4.4x the host's own, native measured twice
(n = 2: its CI's upper end is meaningless), stored valid and scored by the old rule."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from virtbench import directio, diskceiling
from virtbench.analysis import plausibility
from virtbench.ceiling import cache
from virtbench.diskceiling import Ceiling, Key
from virtbench.platforms.base import ExecResult
from virtbench.platforms.container import gvisor
from virtbench.report.data import ReportData
from virtbench.runner import validate
from virtbench.runner.describe import describe
from virtbench.store.db import Store
from virtbench.workloads.base import RunContext
from virtbench.workloads.disk import FioSeqRead

DATA = Path(__file__).parent.parent / "data" / "fio"
RUN = "20261129-000000-ce11"
NATIVE_MIB_S = 836804768 / 2**20  # seq-read-direct1.json: this host's O_DIRECT read, 798 MiB/s
KEY = Key("254:0", "/dev/vda", "ext4", "6.1.0-13-amd64")


def _fio_json(scale: float) -> str:
    """The captured fio O_DIRECT read, its figures scaled (a cache's speed: 4.4x)."""
    doc = json.loads((DATA / "seq-read-direct1.json").read_text())
    read = doc["jobs"][0]["read"]
    for k in ("bw_bytes", "iops", "bw", "io_bytes"):
        read[k] = read[k] * scale
    return json.dumps(doc)


def _samples(scale: float, direct_io: str):
    w = FioSeqRead()
    ctx = RunContext(params={k: p.default for k, p in w.params.items()})
    out = ExecResult(["fio"], 0, _fio_json(scale), "", 5.0)
    return w.parse_run(out, ctx, 1, "overlay", direct_io)


def _ceiling(passes=(790.0, 798.0, 805.0), when: float = 1.8e9) -> Ceiling:
    return Ceiling(KEY, "/var/tmp", when, 64, 2, {"read 1M": {"bandwidth_mib_s": list(passes)}})


# platform -> (its cell labels, O_DIRECT read scale per repetition, its direct_io label)
GVISOR_WHY = gvisor.direct_io_mechanism("overlay", "0.0~20221219.0")
PLATFORMS = {
    "native": ({"platform_type": "native"}, [0.6, 1.9], directio.HONOURED),
    "crun": ({"platform_type": "container", "runtime": "crun"}, [1.0, 1.02], directio.HONOURED),
    # labelled the way today's runs were: nothing said it was cached
    "gvisor": ({"platform_type": "container", "runtime": "runsc"}, [4.4, 4.3], directio.HONOURED),
    # slow but cached: flagged by mechanism whatever the figure
    "gvisor-labelled": (
        {"platform_type": "container", "runtime": "runsc"},
        [0.5, 0.6],
        directio.cached(GVISOR_WHY),
    ),
}


def _store(tmp_path, host: dict) -> Store:
    st = Store.in_dir(tmp_path)
    st.create_run(
        RUN,
        "t",
        "t.toml",
        "",
        1,
        host,
        {"repetitions": 2, "baseline": "native"},
        "0",
        description=describe(["fio-seq-read"]),
    )
    cells = []
    for platform in PLATFORMS:
        for rep in (1, 2):
            seq = len(cells)
            spec = json.dumps({"name": platform, "type": PLATFORMS[platform][0]["platform_type"]})
            cells.append(
                (
                    f"{RUN}/{seq:04d}",
                    RUN,
                    seq,
                    platform,
                    spec,
                    "disk",
                    "fio-seq-read",
                    "solo",
                    rep,
                    "{}",
                )
            )
    st.add_cells(cells)
    for cid, _run, _seq, platform, *_rest in cells:
        labels, scales, dio = PLATFORMS[platform]
        rep = int(cid[-4:]) % 2
        samples = _samples(scales[rep], dio)
        for s in samples:  # what parse_run flagged by mechanism, the store gets as labelled
            s.labels.pop("invalid", None)
        st.finish_cell(RUN, cid, "ok", samples, [], None, {"platform": labels})
    st.set_run_status(RUN, "finished")
    return st


def _bandwidths(st: Store) -> dict[tuple[str, int], tuple[float, bool, str | None]]:
    return {
        (r["platform"], r["repetition"]): (r["value"], bool(r["valid"]), r["invalid_reason"])
        for r in st.sample_rows(RUN)
        if r["metric"] == "bandwidth_mib_s"
    }


def test_gvisor_at_4x_the_host_is_invalid_against_the_ceiling_with_its_date(tmp_path):
    st = _store(tmp_path, {diskceiling.FACT: [_ceiling().to_fact()]})
    flagged = validate.flag_implausible(st, RUN)
    bw = _bandwidths(st)
    for rep in (1, 2):  # 4.4x and 4.3x the device: above the ceiling, every metric of it
        value, valid, reason = bw[("gvisor", rep)]
        assert not valid and value > 3000
        assert "above the host disk ceiling read 1M 798 MiB/s" in reason
        assert "measured 2027-01-15" in reason and "/dev/vda ext4" in reason
        assert "limit 998 MiB/s = +25%" in reason
    assert len(flagged) == 4 * (2 + 2 + 1)  # 4 metrics: gvisor, gvisor-labelled, native rep 2
    # native too: its 1.9x figure came from no device (the 0.6x one did)
    assert not bw[("native", 2)][1] and "above the host disk ceiling" in bw[("native", 2)][2]
    assert bw[("native", 1)][1] and bw[("crun", 1)][1] and bw[("crun", 2)][1]
    st.close()


def test_cached_by_mechanism_is_invalid_whatever_the_figure(tmp_path):
    st = _store(tmp_path, {diskceiling.FACT: [_ceiling().to_fact()]})
    validate.flag_implausible(st, RUN)
    for rep in (1, 2):
        value, valid, reason = _bandwidths(st)[("gvisor-labelled", rep)]
        assert value < 600 and not valid  # below the device, still not a disk figure
        assert reason.startswith("O_DIRECT not honoured: gVisor (runsc 0.0~20221219.0")
    st.close()


def test_seed004_disk_total_never_includes_the_flagged_figures(tmp_path):
    st = _store(tmp_path, {diskceiling.FACT: [_ceiling().to_fact()]})
    validate.flag_implausible(st, RUN)
    data = ReportData.load(st, RUN)
    (disk,) = [s for s in data.seed004 if s.suite == "disk"]
    (direct,) = disk.tests  # the O_DIRECT read (the only mode measured)
    top, where = disk.maxima[direct]
    assert where[0] in ("native", "crun") and top < 1000
    for p in ("gvisor", "gvisor-labelled"):
        assert (direct, (p, "solo")) not in disk.test_scores
        assert len(disk.excluded[(direct, (p, "solo"))]) == 2
    st.close()


def test_without_a_ceiling_the_fallback_uses_native_maximum_not_its_ci():
    # n = 2 native reads 0.6x and 1.9x: the CI's upper end is ~10x; the largest figure is not
    rows = [
        {
            "valid": 1,
            "higher_is_better": 1,
            "value": v,
            "unit": "MiB/s",
            "test_case": "t",
            "role": "target",
            "metric": "bandwidth_mib_s",
            "labels": {"direct": 1},
            "cell_labels": json.dumps({"platform": {"platform_type": "native"}}),
        }
        for v in (0.6 * NATIVE_MIB_S, 1.9 * NATIVE_MIB_S)
    ]
    (ref,) = plausibility.references(rows, {("t", "target", "bandwidth_mib_s"): set()}).values()
    assert ref.limit == pytest.approx(1.25 * 1.9 * NATIVE_MIB_S)


def test_limit_margin_grows_with_the_ceilings_spread():
    tight = _ceiling((790.0, 798.0, 805.0))
    assert tight.limit("read 1M", "bandwidth_mib_s") == pytest.approx(798 * 1.25)
    wide = _ceiling((500.0, 800.0, 900.0))  # disturbed passes: (900-500)/800 x 2 = +100%
    assert wide.limit("read 1M", "bandwidth_mib_s") == pytest.approx(1600.0)
    assert wide.limit("randread 4k", "iops") is None  # not measured: judges nothing


def test_cache_is_private_keyed_and_refuses_symlinks(tmp_path):
    d = tmp_path / "ceiling"
    c = _ceiling(when=1.8e9)
    path = cache.save(c, d)
    assert stat.S_IMODE(os.stat(d).st_mode) == 0o700
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert cache.load(KEY, d) == c
    other = Key("254:16", "/dev/vdb", "xfs", KEY.kernel)
    assert cache.load(other, d) is None  # another device: measured anew
    assert not cache.fresh(c, max_age_s=3600)  # 2027 is in the future of no clock: age < 0
    path.unlink()
    path.symlink_to(tmp_path / "elsewhere.json")
    (tmp_path / "elsewhere.json").write_text(json.dumps(c.to_fact()))
    assert cache.load(KEY, d) is None  # never follows a symlink
    with pytest.raises(cache.CeilingError, match="not a regular file"):
        cache.save(c, d)
    link = tmp_path / "link"
    link.symlink_to(d)
    with pytest.raises(cache.CeilingError, match="symbolic link"):
        cache.safe_dir(link)
    os.chmod(d, 0o755)  # ours, others cannot write: made private again
    cache.safe_dir(d)
    assert stat.S_IMODE(os.stat(d).st_mode) == 0o700
    os.chmod(d, 0o777)  # anyone could have planted a ceiling: refused
    with pytest.raises(cache.CeilingError, match="mode 0777"):
        cache.safe_dir(d)
