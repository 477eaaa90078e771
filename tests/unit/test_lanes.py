"""batchq.runtime.lanes in itself: --max-jobs shared by lanes, and a lane's failure (the
processes are tested in tests/acceptance/test_lanes.py)."""

from __future__ import annotations

import threading

import pytest

from batchq.runtime.lanes import Budget, Crew, InHand


def test_a_budget_hands_out_no_more_than_its_jobs() -> None:
    budget = Budget(5)
    assert (budget.take(3), budget.take(3), budget.take(3)) == (3, 2, 0)
    assert budget.spent
    budget.give_back(2)  # a claim that found fewer, or jobs put back unrun
    assert not budget.spent
    assert budget.take(10) == 2


def test_no_budget_is_no_limit() -> None:
    budget = Budget(None)
    assert budget.take(1000) == 1000
    budget.give_back(5)
    assert not budget.spent


def test_a_budget_shared_by_threads_is_never_overdrawn() -> None:
    budget = Budget(10_000)
    taken: list[int] = []

    def take() -> None:
        got = 0
        while piece := budget.take(3):
            got += piece
        taken.append(got)

    threads = [threading.Thread(target=take) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sum(taken) == 10_000
    assert budget.spent and budget.take(1) == 0


class Lane:
    def __init__(self, fail: bool, stop: threading.Event) -> None:
        self.summary = None
        self.fail, self.stop = fail, stop

    def loop(self) -> None:
        if self.fail:
            raise RuntimeError("lane broke")
        self.stop.wait(10)  # serves until the crew is stopped

    def in_hand(self) -> InHand:
        return InHand([], [], None)


def test_a_lane_s_failure_stops_the_others_and_is_raised() -> None:
    stop = threading.Event()
    made = iter([False, True, False])
    crew = Crew(3, lambda: Lane(next(made), stop), stop.set)
    with pytest.raises(RuntimeError, match="lane broke"):
        crew.run(lambda: None, 0.01)
    assert stop.is_set()


def test_the_process_s_own_failure_stops_the_lanes_first() -> None:
    stop = threading.Event()
    crew = Crew(2, lambda: Lane(False, stop), stop.set)

    def tick() -> None:
        raise ConnectionError("the process's own connection")

    with pytest.raises(ConnectionError):
        crew.run(tick, 0.01)
    assert stop.is_set()
    assert len(crew.others_in_hand(crew.lanes[0])) == 1
