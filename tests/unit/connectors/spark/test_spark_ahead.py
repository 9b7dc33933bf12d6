"""AheadDataFrame (connectors/spark/_ahead.py): a batch's DataFrame built ahead on one thread and
taken by the batch's own run on another, without a batch ever waiting on a build not started."""

from __future__ import annotations

import threading
from typing import Any

from stormpy.connectors.spark._ahead import AheadDataFrame


def test_a_build_under_way_is_waited_for_and_its_dataframe_taken_once() -> None:
    ahead = AheadDataFrame()
    session = object()
    started, release = threading.Event(), threading.Event()

    def dataframe(spark: Any) -> str:
        started.set()
        release.wait(60)
        return f"df on {id(spark)}"

    builder = threading.Thread(target=ahead.build, args=(lambda: session, dataframe))
    builder.start()
    assert started.wait(60) and ahead.state == "building"
    got: list[Any] = []
    taker = threading.Thread(target=lambda: got.append(ahead.take(session, lambda: False, 0.01)))
    taker.start()
    taker.join(0.2)
    assert taker.is_alive()  # waits for the build under way
    release.set()
    taker.join(60)
    builder.join(60)
    assert got == [f"df on {id(session)}"] and ahead.state == "built"


def test_taking_before_the_build_starts_makes_the_build_a_no_op() -> None:
    ahead = AheadDataFrame()
    assert ahead.take(object(), lambda: False) is None and ahead.state == "taken"
    calls: list[int] = []
    ahead.build(lambda: calls.append(1), lambda s: calls.append(2))  # type: ignore[arg-type,func-returns-value]
    assert calls == [] and ahead.state == "taken"


def test_a_failed_build_or_another_session_leaves_the_dataframe_to_the_batch() -> None:
    failed = AheadDataFrame()
    failed.build(lambda: "s", lambda s: 1 / 0)  # type: ignore[arg-type,return-value]
    assert failed.state == "built" and failed.take("s", lambda: False) is None  # type: ignore[arg-type]
    other = AheadDataFrame()
    other.build(lambda: "old", lambda s: "df")  # type: ignore[arg-type,return-value]
    assert other.take("new", lambda: False) is None  # type: ignore[arg-type]


def test_giving_up_stops_the_wait() -> None:
    ahead = AheadDataFrame()
    started, release = threading.Event(), threading.Event()
    builder = threading.Thread(target=ahead.build, args=(
        lambda: "s", lambda s: started.set() or (release.wait(60) and "df")))
    builder.start()
    assert started.wait(60)
    tries: list[int] = []
    assert ahead.take("s", lambda: tries.append(1) is None and len(tries) >= 3, 0.001) is None  # type: ignore[arg-type]
    assert len(tries) == 3
    release.set()
    builder.join(60)
