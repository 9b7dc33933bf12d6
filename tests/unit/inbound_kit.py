"""``worker/inbound.Inbound`` over a hand-written table of what each local task takes, for the
tests of the inbound table and of runs on the wire: ``TABLE`` (below), and ``InboundHarness``,
whose ``take`` packs the given records into one frame and hands it to the Inbound."""

from __future__ import annotations

from typing import Any

import msgpack

from stormpy.topology._fields import Fields
from stormpy.worker.inbound import ONE_ROOT, PAIRS, Inbound

FIELDS = Fields(["word", "n"])
#: dest 10 (a bolt) takes "default" (2 values) from task 1 of "src"; dest 20 (a spout) takes
#: replies from acker 5; dest 30 (an acker) takes acks from task 1; dest 40 (columnar) takes
#: batches of "default" from task 1
#: and a stream of no fields ("empty"); 40 is also (wrongly) said to take acks, to show a batch
#: on an acker stream is refused
NONE = Fields([])
TABLE: dict[int, dict[int, Any]] = {
    10: {1: {"default": (2, "src", FIELDS), "empty": (0, "src", NONE)}},
    20: {5: {"__ack_ack": (ONE_ROOT, "__acker", None)}},
    30: {1: {"__ack_ack": (PAIRS, "src", None), "__ack_fail": (1, "src", None)}},
    40: {1: {"default": (2, "src", FIELDS), "empty": (0, "src", NONE),
             "__ack_ack": (PAIRS, "src", None)}},
}


class InboundHarness:
    def __init__(self) -> None:
        self.queued: dict[int, list[Any]] = {10: [], 20: [], 30: [], 40: []}
        #: the sender of a frame: named after the frame itself, so a log line shows which
        self.inbound = Inbound(TABLE, {t: q.append for t, q in self.queued.items()},
                               lambda frame: f"tcp://peer:{len(frame)}", "w-1",
                               batch_appenders={40: self.queued[40].append})
        self.last_frame = b""

    def take(self, *items: Any) -> int:
        self.last_frame = msgpack.packb(list(items), use_bin_type=True)
        return self.inbound.take([self.last_frame])
