"""Records/s through ``spout → KafkaBolt`` against a plain confluent-kafka produce loop.

    python -m bench.kafka_bolt [--records 100000] [--partitions 4] [--repeat 3]
                               [--acks all] [--bootstrap HOST:PORT]

Interleaved (A B, A B, ...) so a change in the machine's load hits both runners alike, best of
``--repeat``, each run writing ``--records`` records (key: the record number, value: 100 bytes) to
a fresh topic of ``--partitions`` partitions:

* **plain producer loop** — one confluent-kafka Producer; ``produce`` every record with a delivery
  callback that counts successful deliveries, ``poll(0)`` every 1,000 records (and ``poll(0.05)``
  while the local queue is full), ``flush`` at the end;
* **spout → KafkaBolt** — a spout emitting the same records as reliable tuples (message ids, one
  acker; 100 per ``emit_many``, so the cost measured is the bolt's and the tracking's), the bolt
  producing them (its batch form: ``produce`` per tuple, delivery reports served off the loop and
  acked with ``ack_many``); a tuple is acked only once its delivery was confirmed, and the run
  ends when the spout saw every ack;
* **spout batches → KafkaBolt** — the same records and message ids, 100 per ``emit_batch`` (one
  tuple tree per 100: the replay unit is the batch), reaching the bolt's columnar form
  (``execute_columns``: one ``ColumnBatch`` per 100 records, the rows produced with one shared
  delivery callback, the batch acked once all its rows were delivered); the spout still gets an
  ``ack`` per message id, each only after its record's delivery.

Why the sides are equal: the same records, the same broker, the same producer properties (``acks``
from ``--acks``, ``linger.ms``, batch size) on a fresh topic each run; each clock runs from creating
the producer (the plain loop) / submitting the topology (the bolt's ``prepare`` creates its producer)
until every delivery was confirmed — the plain loop's ``flush`` returns when the last delivery
report is in, the bolt's last ack reaches the spout only after its delivery report. Both count
every delivery once in Python. The bolt side additionally emits a tuple per record, moves it
through the executor loop, tracks it in the acker and hands delivery reports back from the
background poll — the cost being measured. Target (issue 11): bolt >= 0.5x the plain loop.

Without ``--bootstrap`` a broker is started for the run: Apache Kafka (KRaft, one node; ``make
kafka`` installs it) when Java and its jars are there, else tansu; ``--broker kafka|tansu`` forces one,
and the results name it. Results go to
bench/results/kafka_bolt.json.
"""

from __future__ import annotations

import argparse
import json
import platform
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from stormpy.connectors.kafka import KafkaBolt, KafkaBoltConfig
from stormpy.testing import LocalCluster
from stormpy.testing import _registry as registry
from stormpy.testing._kafka import BROKER_CHOICES, create_topic, start_broker
from stormpy.topology import Spout, TopologyBuilder, TopologyContext

RESULTS = Path(__file__).parent / "results"
PLAIN = "plain confluent-kafka produce loop"
BOLT = "spout -> KafkaBolt (acked on delivery)"
BATCHES = "spout batches -> KafkaBolt columns (acked on delivery)"
VALUE = b"x" * 100


def producer_props(acks: str) -> dict[str, Any]:
    return {"acks": acks, "linger.ms": 5, "batch.num.messages": 10_000,
            "queue.buffering.max.messages": 100_000}


class Acks:
    """Written by the spout task: acks seen; ``done`` set (and the time kept) at the ``target``-th,
    so the runner waits without polling."""

    def __init__(self, target: int = 0) -> None:
        self.n = 0
        self.target = target
        self.last = 0.0
        self.done = threading.Event()


class RecordSpout(Spout):
    """Emits ``key, message`` for record numbers below ``count`` with message ids, ``BATCH`` at a
    time with ``emit_many`` (the cheapest feed: the bench measures the bolt); counts acks into the
    registry's Acks (a failed tuple is emitted again)."""

    outputs = ["key", "message"]
    BATCH = 100

    def __init__(self, key: str, count: int, batches: bool = False) -> None:
        self.key = key
        self.count = count
        self.batches = batches

    def open(self, conf: Mapping[str, Any], context: TopologyContext) -> None:
        self.acks: Acks = registry.lookup(self.key)
        self.next = 0
        self.replay: list[int] = []

    def next_tuple(self) -> None:
        if self.replay:
            ids, self.replay = self.replay, []
        elif self.next < self.count:
            ids = list(range(self.next, min(self.next + self.BATCH, self.count)))
            self.next += len(ids)
        else:
            return
        values = [[str(i).encode(), VALUE] for i in ids]
        if self.batches:
            self.emit_batch(values, msg_ids=ids)
        else:
            self.emit_many(values, msg_ids=ids)

    def ack(self, msg_id: Any) -> None:
        acks = self.acks
        acks.n += 1
        if acks.n == acks.target:
            acks.last = time.perf_counter()
            acks.done.set()

    def fail(self, msg_id: Any) -> None:
        self.replay.append(msg_id)


def plain_loop(bootstrap: str, topic: str, records: int, acks: str) -> tuple[int, float, float]:
    from confluent_kafka import Producer

    delivered = [0]

    def on_delivery(err: Any, _msg: Any) -> None:
        if err is None:
            delivered[0] += 1

    start = time.perf_counter()
    cpu = time.process_time()
    producer = Producer({"bootstrap.servers": bootstrap, **producer_props(acks)})
    for i in range(records):
        while True:
            try:
                producer.produce(topic, value=VALUE, key=str(i).encode(), on_delivery=on_delivery)
                break
            except BufferError:
                producer.poll(0.05)
        if i % 1_000 == 0:
            producer.poll(0)
    left = producer.flush(120)
    secs = time.perf_counter() - start
    cpu = time.process_time() - cpu
    if left:
        raise RuntimeError(f"plain loop: {left} records undelivered")
    return delivered[0], secs, cpu


def bolt_run(bootstrap: str, topic: str, records: int, acks: str,
             batches: bool = False) -> tuple[int, float, float]:
    counter = Acks(records)
    key = registry.register(counter)
    sink = KafkaBoltConfig(bootstrap_servers=bootstrap, topic=topic, producer_props=producer_props(acks))
    builder = TopologyBuilder()
    builder.set_spout("records", RecordSpout, kwargs={"key": key, "count": records, "batches": batches})
    builder.set_bolt("to-kafka", KafkaBolt.of(sink)).shuffle_grouping("records")
    conf = {"topology.acker.executors": 1, "topology.max.spout.pending": 20_000}
    try:
        with LocalCluster() as cluster:
            start = time.perf_counter()
            cpu = time.process_time()
            cluster.submit_topology("bench", conf, builder.create_topology())
            while not counter.done.wait(0.2):
                cluster.wait_for(lambda: True)  # raises a failed worker's error
                if time.perf_counter() > start + 600:
                    raise TimeoutError(f"{counter.n} of {records} tuples acked in 600 s")
            cpu = time.process_time() - cpu
    finally:
        registry.unregister(key)
    return counter.n, counter.last - start, cpu


def best_of_interleaved(runs: dict[str, Callable[[], tuple[int, float, float]]],
                        repeat: int) -> dict[str, tuple[int, float, float]]:
    """Per runner: (records, best rate, least CPU seconds of the process — every thread, the
    client's included — per record)."""
    best: dict[str, tuple[int, float, float]] = {}
    for _ in range(repeat):
        for name, run in runs.items():
            n, secs, cpu = run()
            _, rate, cpu_per = best.get(name, (0, 0.0, float("inf")))
            best[name] = (n, max(rate, n / secs), min(cpu_per, cpu / n))
    return best


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.kafka_bolt", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--acks", default="all", help="the producer's acks setting (both sides)")
    parser.add_argument("--bootstrap", default=None, help="use this broker instead of starting one")
    parser.add_argument("--broker", choices=BROKER_CHOICES, default="auto",
                        help="which broker to start without --bootstrap (auto: Apache Kafka when installed)")
    parser.add_argument("--output", type=Path, default=RESULTS / "kafka_bolt.json")
    args = parser.parse_args()
    broker = None if args.bootstrap else start_broker(args.broker, echo=print)
    bootstrap = args.bootstrap or broker.bootstrap_servers  # type: ignore[union-attr]
    broker_name = broker.flavour if broker is not None else f"the broker at {bootstrap}"

    def fresh_topic() -> str:
        return create_topic(bootstrap, f"bench-out-{uuid.uuid4().hex[:8]}", args.partitions)

    try:
        n, acks = args.records, args.acks
        best = best_of_interleaved({
            PLAIN: lambda: plain_loop(bootstrap, fresh_topic(), n, acks),
            BOLT: lambda: bolt_run(bootstrap, fresh_topic(), n, acks),
            BATCHES: lambda: bolt_run(bootstrap, fresh_topic(), n, acks, batches=True),
        }, args.repeat)
    finally:
        if broker is not None:
            broker.stop()
    plain_rate = best[PLAIN][1]
    plain_cpu = best[PLAIN][2]
    results = {name: {"records": count, "records_per_sec": round(rate, 1),
                      "vs_plain": round(rate / plain_rate, 3),
                      "cpu_us_per_record": round(cpu_per * 1e6, 2),
                      "cpu_vs_plain": round(plain_cpu / cpu_per, 3)}
               for name, (count, rate, cpu_per) in best.items()}
    for name, r in results.items():
        print(f"{name}: {r['records_per_sec']:,.0f} records/s ({r['vs_plain']:.2f}x plain); "
              f"CPU {r['cpu_us_per_record']:.2f} µs/record ({r['cpu_vs_plain']:.2f}x)")
    doc = {"broker": broker_name, "records": args.records, "partitions": args.partitions,
           "repeat": args.repeat,
           "acks": args.acks, "python": platform.python_version(), "machine": platform.machine(),
           "results": results}
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(doc, indent=2) + "\n")


if __name__ == "__main__":
    main()
