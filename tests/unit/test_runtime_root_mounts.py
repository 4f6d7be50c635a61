"""A runtime's own bookkeeping mount in virtbench's root for it (current runsc leaves a
null-netns bind mount there after its last container) is unmounted, by teardown and by the
containers cleaner, and only once no container of that runtime is left."""

from __future__ import annotations

from virtbench.platforms.container import platform, runtimes


def _runsc(tmp_path, monkeypatch, ids, unmounted):
    rt = runtimes.Runsc("host")
    monkeypatch.setattr(runtimes.Runsc, "root", property(lambda self: tmp_path))
    monkeypatch.setattr(runtimes.Runsc, "list_ids", lambda self: list(ids))
    monkeypatch.setattr(runtimes.Runsc, "delete", lambda self, cid: None)
    monkeypatch.setattr(runtimes.storage, "mounts_under", lambda root: [f"{root}/null-netns"])
    monkeypatch.setattr(runtimes.storage, "umount", unmounted.append)
    return rt


def test_a_left_mount_in_an_empty_runtime_root_is_unmounted(tmp_path, monkeypatch):
    unmounted = []
    rt = _runsc(tmp_path, monkeypatch, [], unmounted)
    monkeypatch.setattr(platform.runtimes, "every", lambda: [rt])
    assert platform.clean() == [f"runsc mount {tmp_path}/null-netns"]
    assert unmounted == [f"{tmp_path}/null-netns"]


def test_a_runtime_root_with_a_live_container_keeps_its_mounts(tmp_path, monkeypatch):
    unmounted = []
    rt = _runsc(tmp_path, monkeypatch, ["vb-live"], unmounted)
    monkeypatch.setattr(platform.runtimes, "every", lambda: [rt])
    monkeypatch.setattr(platform.cleanup, "in_use", lambda cid: True)
    assert platform.clean() == [] and rt.release_root() == [] and unmounted == []
