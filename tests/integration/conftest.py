import pytest

from virtbench.campaign.loader import DISTURBED_ENV


@pytest.fixture(autouse=True)
def _disturbed_cells_kept(monkeypatch):
    """Integration tests check mechanics, not noise: on a busy CI host a cell another job
    disturbed is labelled, not made invalid (test_disturbance_run sets its own policy)."""
    monkeypatch.setenv(DISTURBED_ENV, "keep")
