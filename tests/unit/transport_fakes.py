"""A transport for worker tests that run without sockets: it records what is sent, accepts or
refuses frames as a test tells it, and hands the loop the frames a test puts in its inbox."""

from __future__ import annotations

from collections.abc import Mapping

from stormpy import TopologyBuilder
from stormpy.messaging.codec import decode_frame
from stormpy.messaging.transport import Transport
from stormpy.testing import Capture, FeederSpout
from stormpy.topology._spec import TopologySpec
from stormpy.worker import Worker, WorkerConfig
from stormpy.worker.inbound import wire_tuples


class ScriptedTransport(Transport):
    """``sent``: every accepted (peer, frame), in order. ``accept``: True (take every frame),
    False (refuse every frame) or a number of frames still to take before refusing; ``refused``
    counts refusals. ``inbox``: frames :meth:`receive` hands out, oldest first. Waiting returns
    at once."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, bytes]] = []
        self.inbox: list[bytes] = []
        self.accept: bool | int = True
        self.refused = 0

    def set_peers(self, peers: Mapping[str, str]) -> None:
        pass

    def send(self, peer: str, frame: bytes) -> bool:
        ok = self.accept if isinstance(self.accept, bool) else self.accept > 0
        if not ok:
            self.refused += 1
            return False
        if not isinstance(self.accept, bool):
            self.accept -= 1
        self.sent.append((peer, frame))
        return True

    def sent_tasks(self) -> list[tuple[str, int]]:
        """(peer, destination task) of every tuple in the accepted frames, in order."""
        return [(peer, t[0]) for peer, frame in self.sent for t in wire_tuples(decode_frame(frame))]

    def receive(self, max_frames: int) -> list[bytes]:
        out, self.inbox = self.inbox[:max_frames], self.inbox[max_frames:]
        return out

    def wait(self, timeout: float) -> None:
        pass

    def wake(self) -> None:
        pass

    def close(self) -> None:
        pass


def two_worker_topology(feeder: FeederSpout, capture: Capture) -> TopologySpec:
    """Spout "f" feeding "sink" (local-or-shuffle, 2 tasks) and "all" (all grouping, 2 tasks)."""
    b = TopologyBuilder()
    b.set_spout("f", feeder)
    b.set_bolt("sink", capture, 2).local_or_shuffle_grouping("f")
    b.set_bolt("all", Capture(), 2).all_grouping("f")
    return b.create_topology()


def half_worker(feeder: FeederSpout, capture: Capture, conf: dict | None = None,
                transport: ScriptedTransport | None = None) -> tuple[Worker, ScriptedTransport,
                                                                     dict[str, list[int]]]:
    """A worker holding the first task of every component (the rest on peer "b"), opened."""
    spec = two_worker_topology(feeder, capture)
    probe = Worker(WorkerConfig("t", spec, conf or {}, local_tasks=[]))
    tasks = probe.layout.component_tasks
    here = [tasks["f"][0], tasks["sink"][0], tasks["all"][0], tasks["__acker"][0]]
    remote = {t: "b" for t in probe.layout.task_component if t not in here}
    transport = transport or ScriptedTransport()
    worker = Worker(WorkerConfig("t", spec, conf or {}, local_tasks=here, task_peers=remote),
                    transport=transport)
    worker.open()
    return worker, transport, tasks
