"""Replication reports: each seed's findings as data (`findings/`), their quantities
computed from a stored run (`compute.py`) and judged against the paper (`verdict.py`)."""
