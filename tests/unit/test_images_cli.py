"""`virtbench images build/list`: never rebuild an unchanged key unless --force."""

import json

import pytest
from click.testing import CliRunner

from virtbench.cli import cli
from virtbench.images import rootfs


@pytest.fixture
def images(tmp_path, monkeypatch):
    monkeypatch.setattr(rootfs, "IMAGES_DIR", tmp_path)
    monkeypatch.setattr(rootfs.os, "geteuid", lambda: 0)
    monkeypatch.setattr(rootfs.tools, "require", lambda *a, **k: None)
    builds = []

    def fake_build(log):
        builds.append(rootfs.key())
        d = tmp_path / rootfs.key()
        (d / "rootfs").mkdir(parents=True, exist_ok=True)
        (d / rootfs.COMPLETE).write_text("x")
        (d / "manifest.json").write_text(json.dumps({"packages": ["a"], "size_mb": 230}))
        log("built")
        return d / "rootfs"

    monkeypatch.setattr(rootfs, "_build", fake_build)
    return builds


def test_build_once_then_never_again_unless_forced(images):
    runner = CliRunner()
    r = runner.invoke(cli, ["images", "build"])
    assert r.exit_code == 0, r.output
    assert images == [rootfs.key()]
    r = runner.invoke(cli, ["images", "build"])
    assert "already built" in r.output and len(images) == 1
    r = runner.invoke(cli, ["images", "build", "--force"])
    assert r.exit_code == 0 and len(images) == 2


def test_list_and_status_show_current_key(images, tmp_path):
    runner = CliRunner()
    r = runner.invoke(cli, ["images", "list"])
    assert f"current key {rootfs.key()} is not built" in r.output
    runner.invoke(cli, ["images", "build"])
    (tmp_path / "0123456789ab" / "rootfs").mkdir(parents=True)  # an unfinished old build
    r = runner.invoke(cli, ["images", "status"])
    lines = r.output.splitlines()
    assert any(ln.startswith(rootfs.key()) and "current" in ln and "230 MB" in ln for ln in lines)
    assert any(ln.startswith("0123456789ab") and "incomplete" in ln for ln in lines)
