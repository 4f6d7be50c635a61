"""The `vm` platform: QEMU guests (KVM or TCG) controlled through qemu-guest-agent."""
