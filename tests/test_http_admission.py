"""How /api/chat admits graph runs (graph/entrypoints/http_app.py `RunAdmission`).

The graph is CPU-bound, so only a few runs compute at once, first come first served; but a run that stays in
the graph past `RAGATE_RUN_SLOT_SECONDS` is waiting on a provider and must not hold the queue (bench/load.py
--faults measured 7.7 answers/s with four fixed slots, ~15 with this). These tests drive the admission itself
with sleeping "runs" on anyio's clock: who gets in, in which order, how many at once, and that a caller who
gives up while queued leaves the line. Each test takes well under a second.
"""

from __future__ import annotations

import anyio
import pytest

from graph.entrypoints.http_app import RunAdmission, _run_slot_seconds


def _drive(admission: RunAdmission, holds: list[float], gap: float = 0.005):
    """Start one run per hold time, `gap` apart; return [(run, seconds after the start it got in)] and the
    most runs in at once."""
    entered: list[tuple[int, float]] = []
    inside = [0, 0]  # now, peak

    async def run(i: int, hold: float, t0: float) -> None:
        async with admission.admitted():
            inside[0] += 1
            inside[1] = max(inside[1], inside[0])
            entered.append((i, anyio.current_time() - t0))
            await anyio.sleep(hold)
            inside[0] -= 1

    async def main() -> None:
        t0 = anyio.current_time()
        async with anyio.create_task_group() as tasks:
            for i, hold in enumerate(holds):
                tasks.start_soon(run, i, hold, t0)
                await anyio.sleep(gap)

    anyio.run(main)
    return entered, inside[1]


def test_short_runs_are_admitted_a_few_at_a_time_in_arrival_order():
    entered, peak = _drive(RunAdmission(slots=2, slot_seconds=5.0), [0.05] * 6)
    assert [i for i, _ in entered] == list(range(6))
    assert peak == 2
    # three waves of two: the last pair waits for two runs before it
    assert entered[-1][1] >= 0.09


def test_a_run_past_its_slot_time_lets_the_next_one_in():
    # Run 0 "waits on a provider" for 0.6 s; with one slot of 0.1 s, run 1 gets in after ~0.1 s, not 0.6 s.
    entered, peak = _drive(RunAdmission(slots=1, slot_seconds=0.1), [0.6, 0.05, 0.05])
    times = dict(entered)
    assert 0.08 <= times[1] < 0.5
    assert times[2] >= times[1] + 0.04  # run 1 still holds the slot while it computes
    assert peak >= 2


def test_runs_in_the_graph_are_capped_even_when_their_slots_expire():
    entered, peak = _drive(RunAdmission(slots=1, slot_seconds=0.02, in_graph=2), [0.3] * 4)
    assert peak == 2
    times = dict(entered)
    assert times[2] >= 0.25 and times[3] >= 0.25  # the third waits for the first to leave the graph


def test_a_caller_that_gives_up_in_the_queue_leaves_it():
    admission = RunAdmission(slots=1, slot_seconds=10.0)
    order: list[str] = []

    async def hold(name: str, seconds: float) -> None:
        async with admission.admitted():
            order.append(name)
            await anyio.sleep(seconds)

    async def impatient() -> None:
        with anyio.move_on_after(0.05):
            await hold("gave up", 0.01)

    async def main() -> None:
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(hold, "first", 0.2)
            await anyio.sleep(0.01)
            tasks.start_soon(impatient)
            await anyio.sleep(0.01)
            tasks.start_soon(hold, "next", 0.01)

    anyio.run(main)
    assert order == ["first", "next"]
    assert not admission._queue and not admission._running


@pytest.mark.parametrize("value", ["0", "-1", "soon", "601"])
def test_a_bad_slot_time_names_the_setting(monkeypatch, value):
    monkeypatch.setenv("RAGATE_RUN_SLOT_SECONDS", value)
    with pytest.raises(ValueError, match="RAGATE_RUN_SLOT_SECONDS"):
        _run_slot_seconds()


def test_the_slot_time_defaults_to_half_a_second(monkeypatch):
    monkeypatch.delenv("RAGATE_RUN_SLOT_SECONDS", raising=False)
    assert _run_slot_seconds() == 1.0
