"""The ZooKeeper store's compare-and-set (``ZkStore.update``) when ZkStorage retries it after a
connection loss, against an in-memory kazoo stand-in: a write whose reply was lost (it landed)
counts as done and is not applied a second time; a write lost before it reached ZooKeeper is
applied once by the retry."""

from __future__ import annotations

from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import pytest
from kazoo.exceptions import BadVersionError, ConnectionLoss, NodeExistsError, NoNodeError
from kazoo.retry import KazooRetry

from stormpy.cluster.storage import ZkStorage
from stormpy.state._zookeeper import ZkStore
from stormpy.topology._state import StateUnavailableError, decode_state, encode_state

ROOT = "/stormpy"
KEY_PATH = f"{ROOT}/state/n"


class Answer:
    """A kazoo async result that is already there."""

    def __init__(self, value: Any = None, error: BaseException | None = None) -> None:
        self.value = value
        self.error = error

    def wait(self, timeout: float | None = None) -> bool:
        return True

    def get(self, block: bool = True) -> Any:
        if self.error is not None:
            raise self.error
        return self.value


class FakeKazoo:
    """Versioned znodes in memory; ``lose`` names what happens to the next write: ``"reply"``
    (applied, its answer lost with the connection) or ``"request"`` (lost before ZooKeeper saw
    it)."""

    connected = True

    def __init__(self) -> None:
        self.nodes: dict[str, tuple[bytes, int]] = {}
        self.lose: str | None = None
        self.writes = 0

    def retry(self, func: Any) -> Any:
        return KazooRetry(max_tries=5, delay=0.0, max_jitter=0.0)(func)

    def _write(self, refused: BaseException | None, apply: Any, value: Any) -> Answer:
        """The answer to a write ZooKeeper refuses with ``refused`` or applies, as ``lose`` says
        it reaches the client."""
        lose, self.lose = self.lose, None
        if lose == "request":
            return Answer(error=ConnectionLoss())
        if refused is None:
            apply()
            self.writes += 1
        if lose == "reply":
            return Answer(error=ConnectionLoss())
        return Answer(error=refused) if refused is not None else Answer(value)

    def get_async(self, path: str) -> Answer:
        if path not in self.nodes:
            return Answer(error=NoNodeError())
        data, version = self.nodes[path]
        return Answer((data, SimpleNamespace(version=version)))

    def set_async(self, path: str, data: bytes, version: int = -1) -> Answer:
        current = self.nodes[path][1] if path in self.nodes else None
        refused: BaseException | None = None
        if current is None:
            refused = NoNodeError()
        elif version not in (-1, current):
            refused = BadVersionError()

        def apply() -> None:
            assert current is not None
            self.nodes[path] = (data, current + 1)
        return self._write(refused, apply, SimpleNamespace(version=(current or 0) + 1))

    def create_async(self, path: str, data: bytes, makepath: bool = False, **_: Any) -> Answer:
        def apply() -> None:
            self.nodes[path] = (data, 0)
        return self._write(NodeExistsError() if path in self.nodes else None, apply, path)


@pytest.fixture
def zk() -> Iterator[tuple[ZkStore, FakeKazoo]]:
    storage = ZkStorage("127.0.0.1:1", ROOT, operation_timeout_secs=30)
    fake = FakeKazoo()
    real = storage._client  # noqa: SLF001 - never started; swapped for the stand-in
    storage._client = fake  # type: ignore[assignment]  # noqa: SLF001
    storage._ops.client = fake  # type: ignore[assignment]  # noqa: SLF001
    try:
        yield ZkStore(storage, f"{ROOT}/state"), fake
    finally:
        real.close()


def value(fake: FakeKazoo) -> Any:
    return decode_state(KEY_PATH, fake.nodes[KEY_PATH][0])


def test_a_set_whose_reply_was_lost_is_not_applied_twice(zk: tuple[ZkStore, FakeKazoo]) -> None:
    store, fake = zk
    fake.nodes[KEY_PATH] = (encode_state(KEY_PATH, 1), 4)
    fake.lose = "reply"
    assert store.update("n", lambda v: v + 1) is True
    assert value(fake) == 2 and fake.nodes[KEY_PATH][1] == 5
    assert fake.writes == 1


def test_a_create_whose_reply_was_lost_is_not_applied_twice(zk: tuple[ZkStore, FakeKazoo]) -> None:
    store, fake = zk
    fake.lose = "reply"
    assert store.update("n", lambda v: (v or 0) + 1) is True
    assert value(fake) == 1 and fake.nodes[KEY_PATH][1] == 0
    assert fake.writes == 1


def test_a_write_lost_before_it_reached_zookeeper_is_applied_once_by_the_retry(
        zk: tuple[ZkStore, FakeKazoo]) -> None:
    store, fake = zk
    fake.nodes[KEY_PATH] = (encode_state(KEY_PATH, 1), 4)
    fake.lose = "request"
    assert store.update("n", lambda v: v + 1) is True
    assert value(fake) == 2 and fake.nodes[KEY_PATH][1] == 5
    assert fake.writes == 1


def other_writer_sets(fake: FakeKazoo, value: int, *, before_ours: bool) -> None:
    """The next set of ours loses its reply, and another writer sets ``value`` just before it
    reaches ZooKeeper (so ours fails on its version) or just after it landed."""
    real_set = fake.set_async

    def set_with_other(path: str, data: bytes, version: int = -1) -> Answer:
        fake.set_async = real_set  # type: ignore[method-assign]
        other = lambda: real_set(path, encode_state(path, value))  # noqa: E731
        if before_ours:
            other()
        fake.lose = "reply"
        answer = real_set(path, data, version)
        if not before_ours:
            other()
        return answer
    fake.set_async = set_with_other  # type: ignore[method-assign]


def test_a_lost_reply_of_a_write_that_lost_to_another_writer_is_updated_again(
        zk: tuple[ZkStore, FakeKazoo]) -> None:
    store, fake = zk
    fake.nodes[KEY_PATH] = (encode_state(KEY_PATH, 1), 4)
    seen: list[Any] = []
    other_writer_sets(fake, 10, before_ours=True)  # ours fails on its version; reply lost

    def bump(v: Any) -> Any:
        seen.append(v)
        return v + 1

    assert store.update("n", bump) is True
    assert seen == [1, 10] and value(fake) == 11


def test_a_lost_reply_is_an_unknown_outcome_once_others_wrote_on_top(
        zk: tuple[ZkStore, FakeKazoo]) -> None:
    store, fake = zk
    fake.nodes[KEY_PATH] = (encode_state(KEY_PATH, 1), 4)
    seen: list[Any] = []
    other_writer_sets(fake, 10, before_ours=False)  # ours lands (2), then 10; reply lost

    def bump(v: Any) -> Any:
        seen.append(v)
        return v + 1

    with pytest.raises(StateUnavailableError, match="outcome"):
        store.update("n", bump)
    assert seen == [1] and value(fake) == 10  # not applied again on top of the other write


def test_a_create_lost_before_it_reached_zookeeper_is_applied_once_by_the_retry(
        zk: tuple[ZkStore, FakeKazoo]) -> None:
    store, fake = zk
    fake.lose = "request"
    seen: list[Any] = []

    def first(v: Any) -> Any:
        seen.append(v)
        return 1
    assert store.update("n", first) is True
    assert value(fake) == 1 and fake.nodes[KEY_PATH][1] == 0 and fake.writes == 1
    assert seen == [None, None]  # the node is still missing: the retry starts from nothing
