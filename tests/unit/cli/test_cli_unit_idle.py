"""``--idle-stop``'s decisions on a driven clock, at their edges: the period is reached exactly at
``idle_secs`` (not a tick later), ``--idle-stop 0`` stops at the first idle observation, a held
or pending tuple breaks a quiet period as a busy round does, and the refusal of a negative period
names the option and the value."""

from __future__ import annotations

import pytest

from stormpy.cli.idle_watch import IdleWatch, user_activity, user_pending


def test_a_quiet_loop_stops_the_run_exactly_when_the_period_is_over() -> None:
    watch = IdleWatch(2.0)
    assert not watch.observe(10.0, loop_quiet=True, activity=0, pending=0)
    assert not watch.observe(11.5, loop_quiet=True, activity=0, pending=0)
    assert watch.observe(12.0, loop_quiet=True, activity=0, pending=0)


def test_finished_user_work_stops_the_run_exactly_when_the_period_is_over() -> None:
    watch = IdleWatch(2.0)
    assert not watch.observe(10.0, loop_quiet=False, activity=3, pending=0)
    assert not watch.observe(11.9, loop_quiet=False, activity=3, pending=0)
    assert watch.observe(12.0, loop_quiet=False, activity=3, pending=0)


def test_idle_stop_zero_stops_at_the_first_idle_observation() -> None:
    assert IdleWatch(0).observe(5.0, loop_quiet=True, activity=0, pending=0)
    watch = IdleWatch(0)
    assert not watch.observe(5.0, loop_quiet=False, activity=0, pending=0)  # busy, no work yet
    assert watch.observe(5.1, loop_quiet=False, activity=1, pending=0)  # work done, none pending


def test_held_tuples_alone_break_a_quiet_period() -> None:
    watch = IdleWatch(1.0)
    assert not watch.observe(0.0, loop_quiet=True, activity=0, pending=0)
    assert not watch.observe(0.5, loop_quiet=True, activity=0, pending=0, held=1)
    assert not watch.observe(1.2, loop_quiet=True, activity=0, pending=0)  # starts over at 1.2
    assert not watch.observe(2.1, loop_quiet=True, activity=0, pending=0)
    assert watch.observe(2.2, loop_quiet=True, activity=0, pending=0)


def test_pending_tuples_alone_break_a_quiet_period() -> None:
    watch = IdleWatch(1.0)
    assert not watch.observe(0.0, loop_quiet=True, activity=0, pending=0)
    assert not watch.observe(0.5, loop_quiet=True, activity=0, pending=1)
    assert not watch.observe(1.2, loop_quiet=True, activity=0, pending=0)
    assert watch.observe(2.2, loop_quiet=True, activity=0, pending=0)


def test_work_that_ends_while_tuples_are_held_counts_from_their_release() -> None:
    """New user work with a tuple still held is not the start of the idle period; the period
    starts at the first observation with nothing held."""
    watch = IdleWatch(1.0)
    assert not watch.observe(0.0, loop_quiet=False, activity=4, pending=0, held=2)
    assert not watch.observe(0.5, loop_quiet=False, activity=4, pending=0, held=2)
    assert not watch.observe(3.0, loop_quiet=False, activity=4, pending=0)  # released at 3.0
    assert not watch.observe(3.9, loop_quiet=False, activity=4, pending=0)
    assert watch.observe(4.0, loop_quiet=False, activity=4, pending=0)


def test_a_held_tuple_after_the_work_ended_restarts_the_user_period() -> None:
    watch = IdleWatch(1.0)
    assert not watch.observe(0.0, loop_quiet=False, activity=4, pending=0)
    assert not watch.observe(0.9, loop_quiet=False, activity=4, pending=0, held=1)
    assert not watch.observe(1.5, loop_quiet=False, activity=4, pending=0)
    assert not watch.observe(2.4, loop_quiet=False, activity=4, pending=0)
    assert watch.observe(2.5, loop_quiet=False, activity=4, pending=0)


def test_a_quiet_period_survives_steady_observations() -> None:
    """Observing a quiet loop again does not move the start of its period."""
    watch = IdleWatch(1.0)
    for t in (0.0, 0.3, 0.6, 0.9):
        assert not watch.observe(t, loop_quiet=True, activity=0, pending=0)
    assert watch.observe(1.0, loop_quiet=True, activity=0, pending=0)


def test_a_negative_period_is_refused_naming_the_option_and_the_value() -> None:
    with pytest.raises(ValueError) as info:
        IdleWatch(-0.5)
    assert str(info.value) == "--idle-stop must be 0 or more seconds, got -0.5"
    assert IdleWatch(0).idle_secs == 0


def test_user_activity_of_no_task_is_zero_and_pending_of_system_spouts_is_not_counted() -> None:
    assert user_activity([], {}) == 0
    assert user_pending({"$checkpointspout": 4, "__system": 1}) == 0
    assert user_pending({"a": 2, "b": 3, "$checkpointspout": 4}) == 5
    docs = [{"component": "words", "emitted": {"default": 2, "__ack_init": 2, "$x": 1},
             "acked": 1, "failed": 2}]
    assert user_activity(docs, {"words": 0}) == 2 + 1 + 2
    assert user_activity(docs, {}) == 2  # a bolt: its acks and fails are not user activity


def test_a_system_component_listed_first_does_not_hide_the_user_components_after_it() -> None:
    docs = [{"component": "__acker", "emitted": {"__ack_ack": 9}, "acked": 0, "failed": 0},
            {"component": "$checkpointspout", "emitted": {"$checkpoint": 3}, "acked": 3,
             "failed": 0},
            {"component": "words", "emitted": {"default": 4}, "acked": 2, "failed": 1}]
    assert user_activity(docs, {"words": 0, "$checkpointspout": 0}) == 4 + 2 + 1


def test_one_piece_of_work_then_a_held_tuple_released_stops_the_run_after_the_period() -> None:
    """Activity 1 (a single emit) counts as work: once the held tuple is released, the user
    period starts and the run stops a period later."""
    watch = IdleWatch(1.0)
    assert not watch.observe(0.0, loop_quiet=False, activity=1, pending=0, held=1)
    assert not watch.observe(1.0, loop_quiet=False, activity=1, pending=0)
    assert not watch.observe(1.9, loop_quiet=False, activity=1, pending=0)
    assert watch.observe(2.0, loop_quiet=False, activity=1, pending=0)
