"""The co-location CPU budget as one structured value (cpubudget.py): made by the runner,
given to the platform when it is made, stated by samples and read back in one place, also
from stores that hold the older text form."""

import gzip
import shutil
from pathlib import Path

from virtbench import cpubudget
from virtbench.analysis import colocation
from virtbench.cpubudget import BudgetFacts
from virtbench.platforms import registry
from virtbench.platforms.base import PlatformSpec
from virtbench.store.db import Store

STORED = Path(__file__).parent.parent / "data" / "replication"


def test_a_platform_gets_its_budget_when_it_is_made():
    budget = object()  # the platform only keeps it until it provisions
    spec = PlatformSpec("c", "container", {"cpu_quota_us": 50000})
    made = registry.create(spec, "vb-abc123", budget=budget)  # type: ignore[arg-type]
    assert made.budget is budget and made.cpu_budget() is budget
    assert registry.create(spec, "vb-abc124").budget is None


def test_the_old_text_form_reads_as_the_same_value():
    assert cpubudget.from_labels({"cpu_budget": "shared:50000/100000"}) == BudgetFacts(
        "shared", 50000, 100000
    )
    assert cpubudget.from_labels({"cpu_budget": "lifted:50000/100000"}) == BudgetFacts(
        "lifted", 50000, 100000
    )
    own = cpubudget.from_labels({"cpu_budget": "own: cpu_quota_us = 5 inside its VM 'v'"})
    assert own == BudgetFacts("own", note="cpu_quota_us = 5 inside its VM 'v'")
    assert cpubudget.from_labels({"cpu_budget": "none"}) == BudgetFacts("none")
    assert cpubudget.from_labels({}) is None


def test_every_value_reads_back_as_itself():
    for said in (
        BudgetFacts("shared", 50000, 100000),
        BudgetFacts("own"),
        BudgetFacts("own", note="cpu_quota_us = 5 inside its VM 'v'"),
        BudgetFacts("none"),
    ):
        assert cpubudget.from_labels(said.labels()) == said


def test_a_stored_run_of_the_text_form_reads_its_shared_budget(tmp_path):
    """seed003-consolidation-reduced was stored with `cpu_budget` = "shared:50000/100000"."""
    db = tmp_path / "virtbench.db"
    with gzip.open(STORED / "seed003-consolidation-reduced.db.gz") as src, db.open("wb") as dst:
        shutil.copyfileobj(src, dst)
    store = Store(db)
    rows = store.sample_rows(store.runs()[0]["run_id"])
    shared = [r for r in rows if "cpu_budget" in colocation.labels_of(r)]
    assert shared
    said = {cpubudget.from_labels(colocation.labels_of(r)) for r in shared}
    assert said == {BudgetFacts("shared", 50000, 100000)}
    assert {colocation._env_quota(r, {}) for r in shared} == {(50000, 100000)}
