"""Seed 004 Figs. 4-5 (container network and storage modes) rendered in headless Chromium from
a stored run: no cut label, every legend entry drawn, no empty chart; Docker and crun pairs
found from the stored options. Screenshots land in the test's tmp dir for humans.

tests/data/container_modes/dockerrun.db.gz: a reduced campaigns/docker.toml measured on the
2-core development host (native; crun overlay, volume, nat; Docker overlay, volume, nat through
docker-proxy and through iptables DNAT; fio-iozone 64 MiB and iperf3-tcp reverse 3 s; 3
repetitions, 33 cells, 176 s under the machine lock).
"""

from __future__ import annotations

import gzip
import shutil
from pathlib import Path

import pytest

from tests.unit.test_container_modes_report import RUN, _store
from virtbench.report import build
from virtbench.store.db import Store

from .figure_check import assert_figures_ok, available, check_html, only_sections

pytestmark = [
    pytest.mark.figures,
    pytest.mark.skipif(not available(), reason="needs /usr/bin/chromium"),
]

STORED = Path(__file__).parents[1] / "data" / "container_modes" / "dockerrun.db.gz"
SECTION = "container-network-and-storage-modes-seed-004-figs-4-5"


def _stored(tmp_path: Path) -> Store:
    with gzip.open(STORED) as src, open(tmp_path / "virtbench.db", "wb") as dst:
        shutil.copyfileobj(src, dst)
    return Store.open_existing(tmp_path)


def test_stored_docker_run_draws_figs_4_and_5(tmp_path):
    store = _stored(tmp_path)
    (run,) = store.runs()
    page, md = build.render(store, run["run_id"])
    report = check_html(only_sections(page, [SECTION]), tmp_path / "modes.png")
    assert_figures_ok(report)
    titles = [f["title"] for f in report.figures]

    def one(*words: str) -> dict:
        (fig,) = [f for f in report.figures if all(w in f["title"] for w in words)]
        return fig

    # Fig. 4: host vs nat, Docker with both of its nat mechanisms, crun with its own
    docker_net = one("Fig. 4 network · docker, storage overlay")
    assert docker_net["legend"] == [
        "host: docker-overlay",
        "nat (userland-proxy): docker-nat-proxy",
        "nat (iptables): docker-nat-iptables",
    ]
    assert one("Fig. 4 network · crun")["legend"] == ["host: crun-overlay", "nat: crun-nat"]
    # Fig. 5: overlay vs volume per IOzone phase, buffered and O_DIRECT apart, for both
    for runtime in ("docker", "crun"):
        for direct in (0, 1):
            fig = one(f"Fig. 5 storage · {runtime}, network host", f"direct={direct}")
            assert fig["legend"] == [f"overlay: {runtime}-overlay", f"volume: {runtime}-volume"]
            assert fig["marks"] == 12, fig  # 6 phases x 2 modes, none missing
    assert len(titles) == 6, titles
    assert "ratio to native" in page and "docker-nat-proxy [nat (userland-proxy)]" in md


def test_invalid_samples_are_flagged_in_the_figure(tmp_path):
    store = _store(tmp_path)
    page, _md = build.render(store, RUN)
    report = check_html(only_sections(page, [SECTION]), tmp_path / "synthetic.png")
    assert_figures_ok(report)
    # the bar of the group holding an invalid sample is outlined, its tooltip counts it
    fig = only_sections(page, [SECTION])
    assert "1 invalid" in fig and 'stroke="#b00"' in fig
