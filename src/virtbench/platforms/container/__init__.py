"""The container platform (OCI runtimes, overlay/volume storage, host/bridge/nat network)."""
