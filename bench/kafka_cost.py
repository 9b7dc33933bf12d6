"""CPU cost per record of the Kafka spout and bolt paths on the executor loop, without a broker.

    python -m bench.kafka_cost [--records 100000] [--repeat 3]            # CPU µs per record
    python -m bench.kafka_cost --callgrind [--small 20000 --large 60000]  # instructions per record

The wall-clock benches (``bench.kafka_spout``, ``bench.kafka_bolt``) need the broker and move with
the machine's load; this one isolates what stormpy adds per record and is repeatable. It drives
one worker's loop (``Worker.run_once``) on the main thread with:

* **spout, acked / unacked** — ``KafkaSpout → counting bolt`` (AT_LEAST_ONCE with one acker, or
  NO_GUARANTEE without ackers), the spout's confluent-kafka consumer replaced by an in-memory one
  whose ``consume`` hands out real ``confluent_kafka.Message`` objects (built before the clock
  starts) in batches, so the spout's own record handling runs as against a broker;
* **spout-acked-batches / spout-unacked-columns** — the same with the columnar counting bolt
  (``execute_columns``, counting each record of a batch): AT_LEAST_ONCE with ``batch_acking``
  (one tracked batch per poll), or NO_GUARANTEE (one untracked batch per poll);
* **bolt** — ``spout → KafkaBolt`` with reliable tuples, the producer replaced by an in-memory one
  that queues delivery callbacks in ``produce`` and serves them in ``poll`` (on the off-loop pool,
  as the real client does);
* **bolt-batches** — the same with the spout's ``emit_batch`` (100 records per tracked batch)
  reaching the bolt's columnar form (``execute_columns``).

``--callgrind`` runs each case twice (``--small`` and ``--large`` records) under
``valgrind --tool=callgrind`` and prints (instructions of the large run - the small run) / (the
records between): start-up cancels out; the count is load-independent.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import time
from collections.abc import Mapping
from typing import Any

CASES = ("spout-acked", "spout-unacked", "spout-acked-batches", "spout-unacked-columns", "bolt",
         "bolt-batches")
PARTITIONS = 4
VALUE = b"x" * 100


class MemoryConsumer:
    """The part of confluent_kafka.Consumer the spout's client uses, over in-memory Messages."""

    records: list[Any] = []

    def __init__(self, conf: Mapping[str, Any]) -> None:
        self.pos = 0
        self.assigned: set[tuple[str, int]] = set()

    def consume(self, num_messages: int, timeout: float) -> list[Any]:
        out = self.records[self.pos:self.pos + num_messages]
        self.pos += len(out)
        return out

    def incremental_assign(self, parts: list[Any]) -> None:
        self.assigned |= {(p.topic, p.partition) for p in parts}

    def list_topics(self, timeout: float) -> Any:
        from types import SimpleNamespace
        return SimpleNamespace(topics={"t": SimpleNamespace(
            error=None, partitions={p: None for p in range(PARTITIONS)})})

    def committed(self, parts: list[Any], timeout: float) -> list[Any]:
        return parts  # offset -1001 (invalid): nothing committed

    def position(self, parts: list[Any]) -> list[Any]:
        return []

    def commit(self, offsets: Any = None, asynchronous: bool = True) -> list[Any]:
        return []

    def get_watermark_offsets(self, tp: Any, cached: bool = True) -> tuple[int, int]:
        return 0, len(self.records)

    def close(self) -> None:
        pass


class MemoryProducer:
    """confluent_kafka.Producer's produce/poll/flush: ``poll`` serves the queued callbacks."""

    def __init__(self, conf: Mapping[str, Any]) -> None:
        from collections import deque
        self.queue: Any = deque()

    def produce(self, topic: str, value: Any = None, key: Any = None, on_delivery: Any = None,
                **kwargs: Any) -> None:
        self.queue.append(on_delivery)

    def poll(self, timeout: float = 0) -> int:
        q, n = self.queue, 0
        while q:
            q.popleft()(None, None)
            n += 1
        if not n and timeout:
            time.sleep(min(timeout, 0.0005))
        return n

    def flush(self, timeout: float = 0) -> int:
        self.poll()
        return 0


def _messages(n: int, run: int = 500) -> list[Any]:
    """``n`` Messages over the partitions in runs of ``run`` per partition, as the client's
    ``consume`` returns them (one partition's fetched batch after another)."""
    from confluent_kafka import Message
    out: list[Any] = []
    next_offset = [0] * PARTITIONS
    p = 0
    while len(out) < n:
        for _ in range(min(run, n - len(out))):
            i = next_offset[p]
            out.append(Message(topic="t", partition=p, offset=i, key=str(i).encode(), value=VALUE))
            next_offset[p] += 1
        p = (p + 1) % PARTITIONS
    return out


def run(case: str, n: int) -> tuple[int, float]:
    """Run ``case`` over ``n`` records; (records, CPU seconds of the loop)."""
    from bench.kafka_bolt import Acks, RecordSpout
    from bench.kafka_spout import ColumnCountingBolt, Counter, CountingBolt
    from stormpy.connectors.kafka import KafkaBolt, KafkaBoltConfig, KafkaSpout, KafkaSpoutConfig
    from stormpy.connectors.kafka import _client as kclient
    from stormpy.testing import _registry as registry
    from stormpy.topology import TopologyBuilder
    from stormpy.worker.factory import WorkerConfig
    from stormpy.worker.loop import Worker

    builder = TopologyBuilder()
    if case.startswith("bolt"):
        acks = Acks()
        key = registry.register(acks)
        KafkaBolt.producer_factory = staticmethod(MemoryProducer)  # type: ignore[assignment]
        builder.set_spout("records", RecordSpout,
                          kwargs={"key": key, "count": n, "batches": case == "bolt-batches"})
        builder.set_bolt("to-kafka", KafkaBolt.of(KafkaBoltConfig(bootstrap_servers="mem:0", topic="t"))
                         ).shuffle_grouping("records")
        conf = {"topology.acker.executors": 1, "topology.max.spout.pending": 20_000}

        def done() -> bool:
            return acks.n >= n
    else:
        acked = case.startswith("spout-acked")
        columns = case in ("spout-acked-batches", "spout-unacked-columns")
        MemoryConsumer.records = _messages(n)
        counter = Counter()
        key = registry.register(counter)
        ck = kclient.require_confluent_kafka()
        ck_consumer = ck.Consumer
        ck.Consumer = lambda conf: MemoryConsumer(conf)  # the client builds this one
        config = KafkaSpoutConfig(bootstrap_servers="mem:0", group_id="g", topics=["t"],
                                  processing_guarantee="AT_LEAST_ONCE" if acked else "NO_GUARANTEE",
                                  offset_commit_period_ms=1_000, batch_acking=acked and columns)
        builder.set_spout("kafka", KafkaSpout.of(config))
        builder.set_bolt("count", ColumnCountingBolt if columns else CountingBolt,
                         kwargs={"key": key}).shuffle_grouping("kafka")
        conf = {"topology.acker.executors": 1 if acked else 0, "topology.max.spout.pending": 5_000}

        def done() -> bool:
            return counter.n >= n
    worker = Worker(WorkerConfig("kafka-cost", builder.create_topology(), conf))
    worker.tune_gc()
    worker.open()
    start = time.process_time()
    while not done():
        worker.run_once()
    secs = time.process_time() - start
    worker.stop()
    worker._close()  # the components' close and the off-loop pool (the loop ran on this thread)
    if not case.startswith("bolt"):
        ck.Consumer = ck_consumer
    registry.unregister(key)
    return n, secs


def callgrind(case: str, n: int) -> int:
    cmd = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable,
           "-m", "bench.kafka_cost", "--run", case, "--records", str(n)]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True,
                         env={**os.environ, "PYTHONHASHSEED": "0"})
    m = re.search(r"Collected : (\d+)", out.stderr)
    if not m:
        raise RuntimeError(f"no instruction count in: {out.stderr[-2000:]}{out.stdout[-500:]}")
    return int(m.group(1))


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.kafka_cost", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--case", action="append", choices=CASES, help="default: every case")
    parser.add_argument("--callgrind", action="store_true")
    parser.add_argument("--small", type=int, default=20_000)
    parser.add_argument("--large", type=int, default=60_000)
    parser.add_argument("--run", choices=CASES, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.run:
        run(args.run, args.records)
        return
    import stormpy._native as native

    path = "compiled" if native.COMPILED else "pure"
    for case in args.case or CASES:
        if args.callgrind:
            per = (callgrind(case, args.large) - callgrind(case, args.small)) / (args.large - args.small)
            print(f"{case} ({path}): {per:,.0f} instructions per record")
        else:
            best = min(run(case, args.records)[1] for _ in range(args.repeat))
            print(f"{case} ({path}): {best / args.records * 1e6:.2f} CPU µs per record")


if __name__ == "__main__":
    main()
