"""A batch's DataFrame built ahead: while one batch is in Spark, the next one's rows go through
Arrow and ``createDataFrame`` on another background thread, so its job can start as soon as the
slot frees.

``createDataFrame`` from Arrow runs no Spark job (it ships the Arrow batches to the JVM and makes
a local relation), so building it early changes no job's tags or timing rules; the batch's own
job (``process_batch``) still starts only in its turn.

An :class:`AheadDataFrame` moves through ``queued`` → ``building`` → ``built`` (``build``, on a
background thread) unless the batch's own run gets there first: ``take`` (on the batch's thread)
then either finds it ``queued`` and marks it ``taken`` (``build`` will do nothing: the batch
builds its DataFrame itself, so a batch never waits on a job still queued behind it in the pool),
waits for a build under way, or takes the built DataFrame. A DataFrame built on a session that is
no longer the batch's (the session was restarted meanwhile), or a build that failed, is not used:
the batch builds it again and meets any error itself.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["AheadDataFrame", "ignore_outcome"]

_QUEUED, _BUILDING, _BUILT, _TAKEN = "queued", "building", "built", "taken"


class AheadDataFrame:
    """One batch's DataFrame, maybe built ahead (see the module doc). Thread-safe."""

    __slots__ = ("_lock", "_done", "_state", "_session", "_df")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._done = threading.Event()
        self._state = _QUEUED
        self._session: SparkSession | None = None
        self._df: DataFrame | None = None

    def build(self, session: Callable[[], SparkSession],
              dataframe: Callable[[SparkSession], DataFrame]) -> None:
        """Build the DataFrame with ``dataframe(session())`` unless the batch took over first.
        Never raises: a failed build is left for the batch to redo (and report)."""
        with self._lock:
            if self._state != _QUEUED:
                return
            self._state = _BUILDING
        try:
            spark = session()
            self._df = dataframe(spark)
            self._session = spark
        except Exception:  # noqa: BLE001 - the batch builds it again and meets the error itself
            self._df = None
        finally:
            with self._lock:
                self._state = _BUILT
            self._done.set()

    def take(self, session: SparkSession, give_up: Callable[[], bool],
             poll_secs: float = 0.05) -> DataFrame | None:
        """The DataFrame built ahead on ``session``, or None when the caller must build it (not
        started yet, failed, another session, or ``give_up()`` became true while waiting)."""
        with self._lock:
            if self._state == _QUEUED:
                self._state = _TAKEN
                return None
        while not self._done.wait(poll_secs):
            if give_up():
                return None
        df, self._df = self._df, None
        return df if self._session is session else None

    @property
    def state(self) -> str:
        """``queued``, ``building``, ``built`` or ``taken`` (for tests and logs)."""
        return self._state


def ignore_outcome(result: Any, error: BaseException | None) -> None:
    """The off-loop seam's ``on_done`` for a build ahead: its outcome is read by ``take``."""
