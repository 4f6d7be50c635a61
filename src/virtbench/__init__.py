"""virtbench: what virtualization and co-located neighbours cost a workload."""

__version__ = "0.1.0"
