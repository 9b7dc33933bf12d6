"""caused_by: ``raise error from cause`` for compiled modules (mypyc drops the ``from``)."""

from __future__ import annotations

import traceback

import pytest

from stormpy.worker.errors import WorkerError, caused_by


def test_the_cause_is_shown_and_the_handled_error_is_not() -> None:
    cause = ValueError("bad value")
    error = caused_by(WorkerError("split", 3, "boom"), cause)
    assert error.__cause__ is cause and error.__suppress_context__ is True
    assert (error.component, error.task, str(error)) == ("split", 3, "boom")


@pytest.mark.parametrize("cause", [ValueError("bad value"), None])
def test_raising_it_inside_an_except_block_hides_the_implicit_context(cause: BaseException | None) -> None:
    try:
        try:
            raise KeyError("the error being handled")
        except KeyError:
            raise caused_by(WorkerError("split", 3, "component 'split' task 3 raised"), cause)  # noqa: B904
    except WorkerError as exc:
        text = "".join(traceback.format_exception(exc))
    assert "component 'split' task 3 raised" in text
    assert "During handling of the above exception" not in text
    assert "the error being handled" not in text
    assert ("bad value" in text) is (cause is not None)
