"""Each tool's Debian package is named once (tools.py); the image's package list reads it."""

from virtbench import setup_host, tools
from virtbench.images import rootfs

# the image's packages as they were when both lists named them: the image key hashes this
# set, so a change here is a rebuild of every user's root filesystem
IMAGE_PACKAGES = {
    "ca-certificates", "crun", "docker.io", "fio", "hpcc", "iperf3", "iproute2",
    "libnginx-mod-rtmp", "mbw", "nftables", "nginx-light", "openjdk-17-jre-headless",
    "openmpi-bin", "procps", "python3", "qemu-guest-agent", "rt-tests", "sockperf",
    "stress-ng", "sysbench", "util-linux",
}  # fmt: skip


def test_image_packages_are_unchanged():
    assert set(rootfs.PACKAGES) == IMAGE_PACKAGES


def test_the_image_names_no_tool_package_of_its_own():
    # a tool's package comes from tools.TOOLS, never from a second list in rootfs.py
    tool_packages = {t.package for t in tools.TOOLS.values()}
    assert not tool_packages & set(rootfs.IMAGE_ONLY)
    assert not tool_packages & set(setup_host.EXTRA_PACKAGES)
    assert tools.image_packages() <= set(rootfs.PACKAGES)
