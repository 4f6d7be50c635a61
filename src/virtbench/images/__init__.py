"""Images shared by platforms: the Debian root filesystem tree (rootfs.py)."""
