"""The sweep's control (drivers/sweep.py `climb`, `plan_of`, `beyond`) without any tool: a
step is whatever `take` measures, so what steps a sweep takes and why it stops is tested
apart from httperf."""

from virtbench.drivers import sweep
from virtbench.saturation import MAX_STEPS, SATURATED
from virtbench.workloads.web import HttperfSweep

PARAMS = {k: p.default for k, p in HttperfSweep.params.items()}


def _server(limit: float, log: list[float]):
    """A server serving up to `limit` req/s, and half of it past that."""

    def take(i: int, rate: float) -> sweep.StepResult:
        log.append(rate)
        served = rate if rate <= limit else limit / 2
        return sweep.StepResult(i, rate, served, 0, 100)

    return take


def test_a_sweep_that_saturates_within_its_plan_stops_falling():
    offered: list[float] = []
    steps, stopped = sweep.climb(
        [100, 200, 300, 400, 500], [600], _server(250, offered), 2, 0.1, lambda m: None
    )
    assert offered == [100, 200, 300, 400] and stopped == "falling"
    assert sweep.peak(steps).offered_rate == 200


def test_a_sweep_served_in_full_goes_on_until_it_falls_behind():
    offered: list[float] = []
    said: list[str] = []
    steps, stopped = sweep.climb(
        [100, 200], [300, 400, 500, 600], _server(350, offered), 10, 0.1, said.append
    )
    assert offered == [100, 200, 300, 400, 500] and stopped == SATURATED
    assert said and "goes on up to 600 req/s" in said[0]
    offered.clear()
    _, stopped = sweep.climb([100, 200], [], _server(1000, offered), 10, 0.1, said.append)
    assert stopped == MAX_STEPS and offered == [100, 200]  # no extension: a lower bound


def test_the_plan_and_its_extension_follow_the_params():
    plan = sweep.plan_of(PARAMS | {"max_fraction": 1.0}, 1000.0, "min_top_rate")
    assert plan.rates()[0] == 100 and plan.rates()[-1] == 1000
    assert sweep.beyond(PARAMS | {"max_fraction": 1.0, "extend_fraction": 1.3}, plan) == [
        1100,
        1200,
        1300,
    ]
    wide = sweep.plan_of(
        PARAMS | {"max_fraction": 1.0, "min_top_rate": 2000}, 1000.0, "min_top_rate"
    )
    assert wide.rates()[-1] == 2000  # the solo-peak retry's wider top
    absolute = PARAMS | {"mode": "absolute", "rate_start": 50, "rate_step": 50, "max_steps": 3}
    assert sweep.plan_of(absolute, None, "min_top_rate").rates() == [50, 100, 150]
    assert sweep.beyond(absolute, sweep.plan_of(absolute, None, "min_top_rate")) == []
