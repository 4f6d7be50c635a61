"""The conference suite's pure parts: ffmpeg progress and ss parsing (real captured output),
the delay and delivery arithmetic, the saturation verdicts, parameter validation and the
per-user figures read back from store rows."""

from __future__ import annotations

from pathlib import Path

import pytest

from virtbench.analysis import conference as conf
from virtbench.campaign.loader import load as load_campaign
from virtbench.drivers import ffmpeg, rtmp
from virtbench.errors import CampaignError
from virtbench.serving.streams import Usage, bytes_between, parse_ss
from virtbench.workloads.conference import Step, measure_step, server_verdict

DATA = Path(__file__).parent.parent / "data" / "conference"


def test_publisher_progress_parsed():
    pts = ffmpeg.parse_progress((DATA / "ffmpeg-publish-progress.txt").read_text())
    assert len(pts) >= 4
    assert [p.frame for p in pts] == sorted(p.frame for p in pts)
    assert pts[-1].frame > 0 and pts[-1].out_time_s is not None and pts[-1].out_time_s > 0


def test_viewer_progress_na_size_is_fine():
    pts = ffmpeg.parse_progress((DATA / "ffmpeg-play-progress.txt").read_text())
    assert pts and all(p.out_time_s is None or p.out_time_s >= 0 for p in pts)
    assert pts[-1].frame > pts[0].frame


def test_out_time_na_is_none():
    text = "frame=0\nout_time_us=N/A\nprogress=continue\n"
    assert ffmpeg.parse_progress(text)[0].out_time_s is None


def _stream(lags: list[float], fps: float = 15.0) -> list[ffmpeg.Progress]:
    """Blocks every 0.5 s whose pts lag wall time by `lags` (plus a constant 7 s offset)."""
    return [
        ffmpeg.Progress(t=10 + 0.5 * i, frame=int(fps * 0.5 * i), out_time_s=10 + 0.5 * i - 7 - lag)
        for i, lag in enumerate(lags)
    ]


def test_added_delay_is_growth_of_lag_minus_publisher():
    viewer = _stream([0.0, 0.0, 0.2, 0.6])
    publisher = _stream([0.0, 0.0, 0.0, 0.1])
    assert ffmpeg.added_delay_s(viewer, publisher, at=11.5) == pytest.approx(0.5)
    # before the lag grew, nothing was added
    assert ffmpeg.added_delay_s(viewer, publisher, at=10.5) == pytest.approx(0.0)


def test_fps_needs_two_blocks_in_window():
    s = _stream([0.0] * 5)
    assert ffmpeg.fps(s, 10.0, 12.0) == pytest.approx(15.0)
    assert ffmpeg.fps(s, 11.9, 12.1) is None


def test_ss_parsed_from_real_output():
    socks = parse_ss((DATA / "ss-established.txt").read_text())
    assert len(socks) == 2
    assert all(":" in k for k in socks)
    acked = sorted(v[0] for v in socks.values())
    assert acked[-1] > 100_000  # the publisher's socket carried the video


def test_bytes_between_counts_sockets_open_at_both_ends():
    before = {"a:1": (100, 10), "b:2": (0, 0)}
    after = {"a:1": (300, 50), "c:3": (999, 999)}
    assert bytes_between(before, after) == (200, 40)


def _step(**kw) -> Step:
    base = dict(
        users=3,
        streams=6,
        delivery=1.0,
        delivered_fps=15.0,
        delay_ms=0.0,
        delay_max_ms=0.0,
        in_kbps=1.0,
        out_kbps=1.0,
        client_busiest=0.1,
        client_total_pct=10.0,
    )
    return Step(**(base | kw))


def test_server_verdicts():
    assert server_verdict(_step(), 0.95, 1000) is None
    assert "min_delivery" in server_verdict(_step(delivery=0.5), 0.95, 1000)
    assert "max_delay_ms" in server_verdict(_step(delay_max_ms=2500.0), 0.95, 1000)
    # no viewer yet (the first user alone): nothing to judge
    assert server_verdict(_step(streams=0, delivery=None), 0.95, 1000) is None


class _Client:
    def __init__(self, kind, stream, cpus, progress, user=1):
        self.kind, self.stream, self.cpus, self.progress, self.user = (
            kind,
            stream,
            cpus,
            progress,
            user,
        )


def test_measure_step_delivery_and_busiest_cpu():
    pub = _Client("publish", "u1", [0], _stream([0.0] * 9))
    ok = _Client("play", "u1", [0], _stream([0.0] * 9))
    slow = _Client("play", "u1", [1], _stream([0.0] * 9, fps=7.5))
    clients = [pub, ok, slow]
    before = {id(c): Usage(0, 0.0) for c in clients}
    after = {id(pub): Usage(0, 1.0), id(ok): Usage(0, 0.5), id(slow): Usage(0, 0.5)}
    step = measure_step(2, clients, before, after, (4000, 8000), {"u1": pub}, 10.0, 14.0)
    assert step.streams == 2
    assert step.delivery == pytest.approx(0.75)
    assert step.client_busiest == pytest.approx(1.5 / 4)  # CPU 0: 1.5 s over 4 s
    assert step.in_kbps == pytest.approx(8.0) and step.out_kbps == pytest.approx(16.0)


def test_rtmp_conf_one_worker_and_module():
    text = rtmp.conf("/w/vb-rtmp", 1935, "10.0.0.1")
    assert f"load_module {rtmp.MODULE};" in text
    assert "worker_processes 1;" in text and "listen 10.0.0.1:1935;" in text
    assert rtmp.url("::1", 5, "u1") == "rtmp://[::1]:5/conf/u1"


def test_publish_argv_states_stream():
    argv = ffmpeg.publish_argv("rtmp://h:1/conf/u1", ffmpeg.StreamSpec(), 100)
    assert "testsrc2=size=320x240:rate=15" in argv and "-re" in argv
    assert argv[argv.index("-b:v") + 1] == "256k" and argv[argv.index("-c:v") + 1] == "flv"


def _campaign(tmp_path, body: str) -> Path:
    f = tmp_path / "c.toml"
    f.write_text(
        '[campaign]\nname = "c"\n[[platforms]]\nname = "native"\ntype = "native"\n'
        '[suites.conference]\ntest_cases = ["conference-rtmp"]\n' + body
    )
    return f


@pytest.mark.parametrize(
    ("body", "key"),
    [
        ('codec = "vp9"\n', "suites.conference.codec"),
        ("join_interval = 1\n", "suites.conference.join_interval"),
        ("join_interval = 5.0\nsettle = 6.0\n", "suites.conference.settle"),
        ('video_size = "300x200"\n', "suites.conference.video_size"),
        ("min_delivery = 1.5\n", "suites.conference.min_delivery"),
    ],
)
def test_bad_params_name_the_key(tmp_path, body, key):
    with pytest.raises(CampaignError) as err:
        load_campaign(str(_campaign(tmp_path, body)))
    assert key in str(err.value)


def test_shipped_campaigns_load():
    for name in ("conference-quick", "conference"):
        c = load_campaign(name)
        assert c.name == name


def _row(cell, platform, metric, value, users=None, role="target", valid=1, **labels):
    lab = dict(labels) | ({"users": users} if users is not None else {})
    return {
        "suite": "conference",
        "cell_id": cell,
        "platform": platform,
        "metric": metric,
        "value": value,
        "role": role,
        "valid": valid,
        "labels": lab,
    }


def test_per_user_slope_over_repetitions_leaves_saturated_steps_out():
    rows = []
    for cell, k in (("c1", 2.0), ("c2", 4.0)):
        for u in (1, 2, 3):
            rows.append(_row(cell, "native", "cpu_util", 5 + k * u, users=u))
            rows.append(_row(cell, "native", "delivery_ratio", 1.0, users=u))
        # a step past saturation: its CPU would bend the slope
        rows.append(_row(cell, "native", "cpu_util", 100.0, users=4))
        rows.append(_row(cell, "native", "delivery_ratio", 0.5, users=4, saturated="x"))
        rows.append(_row(cell, "native", "users_served", 3, stopped="server saturated"))
    cost = conf.per_user(rows, "cpu_util")["native"]
    assert cost.n == 2 and cost.mean == pytest.approx(3.0)
    assert 4 not in conf.curve(rows, "cpu_util")["native"]
    served = conf.users_served(rows)["native"]
    assert served.summary.mean == 3 and served.bounds == 0


def test_curve_past_saturation_is_apart():
    rows = [
        _row("c1", "vm", "cpu_util", 10.0, users=1),
        _row("c1", "vm", "delivery_ratio", 1.0, users=1),
        _row("c1", "vm", "cpu_util", 99.0, users=2),
        _row("c1", "vm", "delivery_ratio", 0.4, users=2, saturated="x"),
    ]
    assert conf.curve(rows, "cpu_util") == {"vm": {1: [10.0]}}
    assert conf.curve(rows, "cpu_util", past=True) == {"vm": {2: [99.0]}}


def test_measure_step_unpinned_clients_share_the_cpus(monkeypatch):
    monkeypatch.setattr("os.sched_getaffinity", lambda pid: {0, 1})
    pub = _Client("publish", "u1", None, _stream([0.0] * 9))
    view = _Client("play", "u1", None, _stream([0.0] * 9))
    before = {id(pub): Usage(0, 0.0), id(view): Usage(0, 0.0)}
    after = {id(pub): Usage(0, 2.0), id(view): Usage(0, 2.0)}
    step = measure_step(2, [pub, view], before, after, (0, 0), {"u1": pub}, 10.0, 14.0)
    assert step.client_busiest == pytest.approx(0.5)  # 4 CPU s over 4 s on 2 CPUs
    assert step.client_total_pct == pytest.approx(100.0)


class _Data:
    platforms = ["native", "vm"]

    def colour(self, platform):
        return "#000000"

    def platform_labels(self):
        return {"native": {"platform_type": "native"}, "vm": {"platform_type": "vm"}}


def test_report_section_table_and_marked_points():
    from virtbench.report.suites import conference as section

    rows = []
    for cell in ("c1", "c2"):
        for u, cpu in ((1, 2.0), (2, 4.0), (3, 60.0)):
            lab = {"saturated": "delay"} if u == 3 else {}
            rows.append(_row(cell + "vm", "vm", "cpu_util", cpu, users=u))
            rows.append(
                _row(cell + "vm", "vm", "delivery_ratio", 0.5 if u == 3 else 1, users=u, **lab)
            )
        rows.append(_row(cell + "vm", "vm", "users_served", 2, stopped="server saturated at 3"))
    html_table, md = section.table(_Data(), rows)
    assert "2.000 ± 0" in html_table and "server saturated at 3" in html_table
    assert "| vm |" in md
    charts = "".join(section.charts(_Data(), rows))
    assert "CPU by connected users" in charts
    assert "past the server" in charts  # users = 3 drawn as a marked point


def test_worst_delay_catches_a_stall_that_caught_up():
    # the viewer fell 0.8 s behind mid-step, then caught up by the step's end
    viewer = _stream([0.0, 0.0, 0.8, 0.0, 0.0])
    publisher = _stream([0.0] * 5)
    assert ffmpeg.added_delay_s(viewer, publisher, at=12.0) == pytest.approx(0.0)
    assert ffmpeg.worst_added_delay_s(viewer, publisher, 10.0, 12.0) == pytest.approx(0.8)
    # the publisher's own lag is not the server's
    assert ffmpeg.worst_added_delay_s(viewer, viewer, 10.0, 12.0) == pytest.approx(0.0)


def test_server_holding_its_publishers_back_is_saturated():
    # a CPU-starved server that stops reading: its publishers block (TCP), so frames sent
    # and the viewers' lag behind them look normal; only the publishers' own lag shows it
    held = _step(delivery=1.0, delay_max_ms=0.0, publish_lag_ms=1500.0)
    assert "publishers held back" in server_verdict(held, 0.95, 1000)
    assert server_verdict(_step(publish_lag_ms=200.0), 0.95, 1000) is None


def test_measure_step_publisher_lag_not_its_frame_rate():
    # a 5 fps desktop over a 2 s window: its rate from 0.5 s blocks is a frame off (90 %),
    # its lag is not; a publisher that fell 1.2 s behind is held back
    steady = _Client("publish", "d", [0], _stream([0.0] * 9, fps=5.0))
    held = _Client("publish", "u1", [0], _stream([0.0] * 5 + [0.3, 0.6, 0.9, 1.2]))
    usage = {id(steady): Usage(0, 0.0), id(held): Usage(0, 0.0)}
    one = measure_step(1, [steady], usage, usage, (0, 0), {"d": steady}, 12.0, 14.0)
    assert one.publish_lag_ms == pytest.approx(0.0)
    assert server_verdict(one, 0.95, 1000) is None
    both = {"d": steady, "u1": held}
    step = measure_step(1, [steady, held], usage, usage, (0, 0), both, 12.0, 14.0)
    assert step.publish_lag_ms == pytest.approx(1200.0)
    assert "publishers held back" in server_verdict(step, 0.95, 1000)


def test_throttled_share_from_cpu_stat():
    from virtbench.workloads.conference import throttled_share

    before = {"nr_periods": 100, "nr_throttled": 10}
    assert throttled_share(before, {"nr_periods": 300, "nr_throttled": 110}) == 0.5
    assert throttled_share({}, {}) is None  # no quota: the kernel counts no periods


def test_budget_bound_step_labelled_and_left_out_of_the_slope():
    from virtbench.workloads.conference import ConferenceRtmp

    w = ConferenceRtmp()
    labels = w.step_samples(_step(throttled=0.8), 1, None, None)[0].labels
    assert labels["cpu_throttled"] == 0.8 and "budget" in labels["budget_bound"]
    assert "budget_bound" not in w.step_samples(_step(throttled=0.02), 1, None, None)[0].labels
    rows = []
    for cell in ("c1", "c2"):
        for u in (1, 2, 3):
            rows.append(_row(cell, "native", "cpu_util", 0.5 * u, users=u))
        # at its 2 % budget: CPU flat, still serving; the slope must not bend to it
        for u in (4, 5, 6):
            rows.append(_row(cell, "native", "cpu_util", 2.0, users=u, budget_bound="x"))
    assert conf.per_user(rows, "cpu_util")["native"].mean == pytest.approx(0.5)
    assert sorted(conf.curve(rows, "cpu_util")["native"]) == [1, 2, 3, 4, 5, 6]


def test_report_says_where_each_repetition_reached_its_budget():
    from virtbench.report.suites import conference as section

    rows = []
    for cell, first in (("c1", 3), ("c2", 4)):
        for u in range(1, 6):
            lab = {"budget_bound": "x"} if u >= first else {}
            rows.append(_row(cell, "native", "cpu_util", min(u, first), users=u, **lab))
        rows.append(_row(cell, "native", "users_served", 5, stopped="max_users reached"))
    assert conf.budget_reached(rows) == {"native": [3, 4]}
    html_table, _md = section.table(_Data(), rows)
    assert "3 users, 4 users" in html_table


def test_server_binds_the_address_the_client_host_reaches():
    from types import SimpleNamespace

    from virtbench.workloads.base import RunContext
    from virtbench.workloads.conference import bind_address

    class Host:  # a server on the host's loopback (native, a host-network container)
        def listen_address(self):
            return "127.0.0.1"

    remote = SimpleNamespace(client=SimpleNamespace(target_address="10.217.14.10"))
    params = {"client_path": "auto"}
    assert bind_address(Host(), RunContext(params=params, remote=remote)) == "10.217.14.10"
    assert bind_address(Host(), RunContext(params=params)) == "127.0.0.1"


def test_cpu_at_the_quota_counts_as_budget_bound_where_no_throttle_count_says():
    # LXC's quota sits on its payload group: a run whose counters read the container's
    # group labelled no throttling; its CPU at 1 % of a 1 % quota is the budget all the same
    labels = {"lxc": {"cpu_quota_us": 1000, "cpu_period_us": None}, "native": {}}
    budgets = conf.budget_percent(labels)
    assert budgets == {"lxc": pytest.approx(1.0)}
    rows = []
    for cell in ("c1", "c2"):
        for u, cpu in ((1, 0.4), (2, 0.75), (3, 1.02), (4, 1.03)):
            rows.append(_row(cell, "lxc", "cpu_util", cpu, users=u))
    assert conf.per_user(rows, "cpu_util", budgets=budgets)["lxc"].mean == pytest.approx(0.35)
    assert conf.budget_reached(rows, budgets) == {"lxc": [3, 3]}
    # a throttle count, where there is one, is the judge
    counted = [r | {"labels": r["labels"] | {"cpu_throttled": 0.0}} for r in rows]
    assert conf.budget_reached(counted, budgets) == {}


def test_throttle_counts_summed_over_nested_groups(tmp_path):
    from virtbench.workloads.conference import throttle_reader

    (tmp_path / "lxc.payload.x").mkdir()
    (tmp_path / "cpu.stat").write_text("nr_periods 0\nnr_throttled 0\n")
    (tmp_path / "lxc.payload.x" / "cpu.stat").write_text("nr_periods 40\nnr_throttled 30\n")

    class Lxc:
        def cpu_budget(self):
            return None

        def accounting(self):
            from virtbench.platforms.base import Accounting

            return Accounting(cgroups={"cpu": str(tmp_path)})

    assert throttle_reader(Lxc())() == {"nr_periods": 40, "nr_throttled": 30}


def _blocks(frames: list[int], pts: list[float]) -> list[ffmpeg.Progress]:
    return [
        ffmpeg.Progress(10 + 0.5 * i, f, p)
        for i, (f, p) in enumerate(zip(frames, pts, strict=True))
    ]


def test_late_frames_are_not_lost_dropped_ones_are():
    publisher = _stream([0.0] * 5)  # 15 fps, pts advancing with wall time
    # a viewer on a busy client: its last block came before a burst (frames late, not lost)
    late = _blocks([0, 8, 15, 23, 23], [0.0, 0.5, 1.0, 1.5, 1.5])
    got, full = ffmpeg.frames_delivered(late, publisher, 10.0, 12.0)
    assert got / full == pytest.approx(23 / 22.5)  # its frame rate would say 23/30 = 77 %
    # the server dropped a second of frames: pts went on, the frame count did not
    dropped = _blocks([0, 8, 8, 8, 23], [0.0, 0.5, 1.0, 1.5, 2.0])
    got, full = ffmpeg.frames_delivered(dropped, publisher, 10.0, 12.0)
    assert got / full == pytest.approx(23 / 30)
    # nothing arrived in the window: all its frames are missing
    stalled = _blocks([8, 8, 8, 8, 8], [0.5] * 5)
    assert ffmpeg.frames_delivered(stalled, publisher, 10.0, 12.0) == (0.0, pytest.approx(30.0))


def test_delivery_takes_the_higher_estimate_a_drop_lowers_both():
    pub = _Client("publish", "u1", [0], _stream([0.0] * 5))
    usage = {id(pub): Usage(0, 0.0)}

    def delivery(viewer_blocks):
        view = _Client("play", "u1", [0], viewer_blocks)
        return measure_step(2, [pub, view], usage, usage, (0, 0), {"u1": pub}, 10.0, 12.0).delivery

    # late at the window's edge: its frame rate is low, its frames per stream time are not
    assert delivery(_blocks([0, 8, 15, 23, 23], [0.0, 0.5, 1.0, 1.5, 1.5])) >= 1.0
    # timestamps settling after a join (pts ran ahead): its frame rate is whole
    assert delivery(_blocks([0, 8, 15, 23, 30], [0.0, 1.5, 2.0, 2.5, 3.0])) == pytest.approx(1.0)
    # a second the server dropped: both say so
    assert delivery(_blocks([0, 8, 8, 8, 23], [0.0, 0.5, 1.0, 1.5, 2.0])) == pytest.approx(23 / 30)
