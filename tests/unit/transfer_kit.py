"""The worker's Transfer against scripted peers, for the tests of Transfer and of runs on the
wire: task ``COMPONENTS`` (1-3 local, 4-6 on peers ``PEERS``), a transport that refuses chosen
peers, a Transfer built over both and the records of the frames it sent."""

from __future__ import annotations

from collections import deque
from typing import Any

from transport_fakes import ScriptedTransport

from stormpy.messaging.codec import decode_frame
from stormpy.worker.dispatch import Dispatch
from stormpy.worker.inbound import wire_tuples
from stormpy.worker.transfer import Transfer

COMPONENTS = {1: "spout", 2: "bolt", 3: "bolt", 4: "far", 5: "far", 6: "other"}
PEERS = {4: "b", 5: "b", 6: "c"}


class PeerTransport(ScriptedTransport):
    """Refuses every frame for the peers in ``refusing`` (and follows ``accept`` for the
    others)."""

    def __init__(self) -> None:
        super().__init__()
        self.refusing: set[str] = set()

    def send(self, peer: str, frame: bytes) -> bool:
        if peer in self.refusing:
            self.refused += 1
            return False
        return super().send(peer, frame)


def make_transfer(batch: int = 100, queue_cap: int = 10, clock: Any = None,
                  queues: int = 2) -> tuple[Transfer, PeerTransport, Dispatch, list[deque[Any]]]:
    """A Transfer of ``batch`` records per frame from tasks 1-3 to the peers' tasks, with
    ``queues`` local queues of ``queue_cap``, over a :class:`PeerTransport`."""
    transport = PeerTransport()
    dispatch = Dispatch(6, [])
    qs: list[deque[Any]] = [deque() for _ in range(queues)]
    extra = {"clock": clock} if clock is not None else {}
    transfer = Transfer(transport, dispatch, batch, COMPONENTS, qs, queue_cap, **extra)
    transfer.route(PEERS, frozenset({1, 2, 3}))
    return transfer, transport, dispatch, qs


def sent_records(transport: ScriptedTransport) -> list[tuple[str, list[Any]]]:
    """(peer, wire record) of every record in the frames ``transport`` accepted, in order."""
    return [(peer, r) for peer, frame in transport.sent for r in wire_tuples(decode_frame(frame))]
