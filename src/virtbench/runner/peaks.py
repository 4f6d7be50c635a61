"""The run's solo peaks (the `load=PCT` denominators), each measured once and stored as a cell.

Only the storing lives here; what a peak is and how it is measured is scenarios/peaks.py's.

A measurement is a cell of its own: the platform and test case of the cells that use it,
scenario `solo-peak`, repetition 1, the unlimited params in its labels; its samples and series
are stored like any cell's, and its labels name the value taken (`solo_peak`, from the
primary metric `solo_peak_metric`). The co-location cells that use it label their samples
with `solo_peak` and `peak_cell_id`. `--resume` reads finished ones back instead of measuring
them again; an unfinished one (interrupted, or never finished) is measured again into the same
cell. A failed one stays as it is, the evidence of why (its samples' invalid reasons), and the
next attempt gets a cell of its own.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from .. import labelkeys
from ..cgroups import ThrottleCount
from ..errors import WorkloadError
from ..platforms.base import Platform
from ..results import SOLO_PEAK_SCENARIO
from ..scenarios.peaks import Attempt, Peak, PeakKey, SoloPeaks, Unsaturated, cpu_limit, peak_key
from ..store.db import Store
from ..workloads.base import Workload
from .cell import Outcome, cell_id, measure, spec_json

SCENARIO = SOLO_PEAK_SCENARIO  # the scenario column of a solo-peak cell
# a peak cell that ended so is kept: measured again into it, its samples (why no sample was
# valid) would be overwritten by the next attempt's
FINAL = ("failed", "timeout")


class StoredPeaks(SoloPeaks):
    def __init__(
        self, store: Store, run_id: str, report: Callable[[str, str, Outcome], None]
    ) -> None:
        super().__init__()
        self.store, self.run_id = store, run_id
        self.report = report  # (where, test case, outcome) of each measurement, for the console
        self.unfinished: dict[PeakKey, str] = {}  # key -> its cell to measure again
        for row in store.cells(run_id):
            if row.scenario != SCENARIO:
                continue
            labels = row.labels
            key = peak_key(
                row.platform,
                row.test_case,
                labels.get(labelkeys.PARAMS, {}),
                labels.get(labelkeys.PEAK_CPU_LIMIT, ""),
            )
            if row.status == "ok" and labelkeys.SOLO_PEAK in labels:
                self.known[key] = Peak(labels[labelkeys.SOLO_PEAK], row.cell_id)
            elif row.status not in FINAL:
                self.unfinished[key] = row.cell_id

    def measure(self, attempt: Attempt) -> Peak:
        platform, workload, params = attempt.platform, attempt.workload, attempt.params
        limit = cpu_limit(platform)
        key = peak_key(platform.name, workload.name, params, limit)
        cid = self.unfinished.pop(key, None) or self._new_cell(platform, workload, params, limit)
        self.store.start_cell(cid)
        throttled = ThrottleCount(platform.cpu_budget())
        out = measure(platform, attempt.ctx, lambda c, _sampler: attempt.run(c))
        labels: dict[str, Any] = {
            labelkeys.PARAMS: params,  # the key's (--resume), not the retry's wider top rate
            labelkeys.PLATFORM: platform.labels(),
            labelkeys.PEAK_CPU_LIMIT: limit,
        }
        if attempt.top_rate:  # the retry of a sweep that never saturated
            labels[labelkeys.MIN_TOP_RATE] = round(attempt.top_rate, 1)
        if (budget := throttled.budget) is not None:  # measured alone in the shared budget
            ran_out = throttled.labels()
            for s in out.samples:
                for key, value in budget.facts().labels().items():
                    s.labels.setdefault(key, value)
                s.labels.update(ran_out)
        for s in out.samples:  # two peaks of one platform under two limits are two results
            s.labels[labelkeys.PEAK_CPU_LIMIT] = limit or "none"
        value, unsaturated = None, None
        if out.status == "ok":
            try:  # flags a run that never saturated in out.samples, stored so
                value = attempt.value(out.samples)
                labels |= {
                    labelkeys.SOLO_PEAK: value,
                    labelkeys.SOLO_PEAK_METRIC: workload.primary().name,
                }
                bound = [s.labels[labelkeys.PEAK_LOWER_BOUND] for s in out.samples
                         if labelkeys.PEAK_LOWER_BOUND in s.labels]  # fmt: skip
                if bound:  # a schedule scaled by it is said so (the report's note)
                    labels[labelkeys.PEAK_LOWER_BOUND] = bound[0]
            except WorkloadError as exc:
                out.status, out.error = "failed", str(exc)
                unsaturated = exc if isinstance(exc, Unsaturated) else None
        self.store.finish_cell(
            self.run_id, cid, out.status, out.samples, out.series, out.error, labels
        )
        self.report(f"{platform.name} {workload.name} {SCENARIO}", workload.name, out)
        if value is None:
            if out.status not in FINAL:  # interrupted: measured again into this cell
                self.unfinished[key] = cid
            why = f"solo peak of {workload.name} on {platform.name}: {out.error}"
            if unsaturated is not None:  # measured again at once, reaching higher
                raise Unsaturated(why, unsaturated.top_rate)
            raise WorkloadError(why)
        return Peak(value, cid)

    def _new_cell(
        self, platform: Platform, workload: Workload, params: dict[str, Any], limit: str
    ) -> str:
        """A cell row after every cell of the run (the campaign's cells keep their numbers)."""
        seq = max((r.seq for r in self.store.cells(self.run_id)), default=-1) + 1
        cid = cell_id(self.run_id, seq)
        row = (cid, self.run_id, seq, platform.name, spec_json(platform.spec), workload.suite)
        labels = json.dumps({labelkeys.PARAMS: params, labelkeys.PEAK_CPU_LIMIT: limit})
        self.store.add_cells([(*row, workload.name, SCENARIO, 1, labels)])
        return cid
