"""Records/s through ``KafkaSpout → counting bolt`` against a plain confluent-kafka consume loop.

    python -m bench.kafka_spout [--records 200000] [--partitions 4] [--repeat 3]
                                [--bootstrap HOST:PORT]

One topic is filled once with ``--records`` records (100-byte values); then, interleaved (A B C D,
A B C D, ...) so a change in the machine's load hits every runner alike, best of ``--repeat``:

* **plain consumer loop, async commits** — confluent-kafka's recommended batch loop: one Consumer,
  a fresh group, every partition assigned at its low watermark (read with
  ``get_watermark_offsets`` inside the clock, as the spout resolves its start offsets; a logical
  ``OFFSET_BEGINNING`` costs librdkafka's offset-query cycle, ~0.5 s), ``consume(500, 0.1)`` until every
  record was seen; each record is processed (its topic, partition, offset, key and value read,
  counted) and the consumed positions are committed asynchronously every second;
* **plain consumer loop, at-least-once** — the same, committing synchronously every second, after
  the records were processed (confluent-kafka's at-least-once pattern);
* **KafkaSpout → counting bolt, acked** — AT_LEAST_ONCE, one acker: every record is a tracked
  tuple, acked by the bolt, its offset committed (synchronously, the acked prefix) every second;
  compared with the at-least-once plain loop;
* **KafkaSpout → counting bolt, unacked** — NO_GUARANTEE, no ackers: untracked tuples, the
  position committed asynchronously every second; compared with the async-commit plain loop;
* **KafkaSpout → columnar counting bolt, acked, batch_acking** — AT_LEAST_ONCE with
  ``batch_acking``: each poll's records are ONE tracked batch (one tuple tree, one acker entry,
  per-record message ids and offsets), delivered to the bolt's ``execute_columns`` as one
  ``ColumnBatch``, which counts each of its records and acks the batch; the acked prefix is
  committed every second as above; compared with the at-least-once plain loop;
* **KafkaSpout → columnar counting bolt, unacked** — NO_GUARANTEE: each poll's records are one
  untracked ``ColumnBatch``; compared with the async-commit plain loop.

Why the sides are equal: each run reads the same records from the same broker from offset 0 with a
fresh consumer group, the same consumer properties (``CONSUMER_PROPS``, among them
``fetch.queue.backoff.ms`` 10: librdkafka's 1,000 ms default idles any consumer that drains its
prefetch queue faster, which made the plain loop's rate flip between two modes from run to run)
and the same batch size (500 per ``consume``,
the spout's ``max_poll_records``); each clock runs from creating the consumer (the plain loop) /
submitting the topology (the spout, whose ``open`` creates the consumer) until the last record was
counted; both sides read the same fields of every record with no decoding (the spout's default
translator emits ``topic, partition, offset, key, value`` as they are) and count every record once
in Python; both commit on the same one-second period with the same semantics: at-least-once
commits only what was processed (the plain loop: positions after processing; the spout: the
acked prefix), the other side commits the position asynchronously. The spout side additionally
builds a tuple per record (the columnar runners: a row per record, one batch per poll) and moves
it through the executor loop to the bolt (and the acker) — the cost being measured. The columnar
bolt counts every record of a batch in a Python loop over its rows, as the plain loop counts
every record it consumed, not ``len(batch)`` at once. Targets (issue 11): acked >= 0.5x the plain
loop, unacked >= 0.8x.

Both clocks include the client's start-up (connecting, resolving the start offsets: about 0.2-0.7 s
before the first record), which weighs less the more records are read; ``steady`` in the results is
each side's rate from its first record to its last.

Without ``--bootstrap`` a broker is started for the run: Apache Kafka (KRaft, one node; ``make
kafka`` installs it) when Java and its jars are there, else tansu; ``--broker kafka|tansu`` forces one,
and the results name it. Results go to
bench/results/kafka_spout.json.
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

from stormpy.connectors.kafka import KafkaSpout, KafkaSpoutConfig
from stormpy.testing import LocalCluster
from stormpy.testing import _registry as registry
from stormpy.testing._kafka import BROKER_CHOICES, create_topic, start_broker
from stormpy.topology import Bolt, TopologyBuilder, TopologyContext, Tuple
from stormpy.topology._columns import ColumnBatch

RESULTS = Path(__file__).parent / "results"
CONSUMER_PROPS = {"fetch.wait.max.ms": 10, "queued.min.messages": 100_000, "fetch.queue.backoff.ms": 10}
#: both sides: records per consume call (the spout's max_poll_records default) and commit period
MAX_POLL_RECORDS = 500
COMMIT_PERIOD_MS = 1_000
PLAIN = "plain confluent-kafka loop, async commits"
PLAIN_ALO = "plain confluent-kafka loop, at-least-once (sync commit after processing)"
ACKED = "KafkaSpout -> count, acked (AT_LEAST_ONCE)"
UNACKED = "KafkaSpout -> count, unacked (NO_GUARANTEE)"
ACKED_BATCHES = "KafkaSpout -> columnar count, acked (AT_LEAST_ONCE, batch_acking)"
UNACKED_COLUMNS = "KafkaSpout -> columnar count, unacked (NO_GUARANTEE)"


class Counter:
    """Written by the one counting bolt task: records seen, when the first and the ``target``-th
    came (perf_counter), and ``done`` set at the ``target``-th (the runner waits on it without
    polling, so the worker's loop has the interpreter to itself)."""

    def __init__(self, target: int = 0) -> None:
        self.n = 0
        self.target = target
        self.first = 0.0
        self.last = 0.0
        self.done = threading.Event()


class CountingBolt(Bolt):
    """Counts its input tuples into the registry's Counter and acks them."""

    def __init__(self, key: str) -> None:
        self.key = key

    def prepare(self, conf: Mapping[str, Any], context: TopologyContext) -> None:
        self.counter: Counter = registry.lookup(self.key)

    def execute(self, tup: Tuple) -> None:
        counter = self.counter
        if not counter.n:
            counter.first = time.perf_counter()
        counter.n += 1
        if counter.n == counter.target:
            counter.last = time.perf_counter()
            counter.done.set()
        self.ack(tup)


class ColumnCountingBolt(CountingBolt):
    """``CountingBolt`` for batches: ``execute_columns`` counts each record of the batch (a loop
    over its rows, as the plain loop counts each consumed record) and acks the batch."""

    def execute_columns(self, batch: ColumnBatch) -> None:
        counter = self.counter
        if not counter.n:
            counter.first = time.perf_counter()
        n = counter.n
        for values in batch.rows:
            if values:
                n += 1
        counter.n = n
        if n >= counter.target > 0 and not counter.done.is_set():
            counter.last = time.perf_counter()
            counter.done.set()
        self.ack(batch)


def fill(bootstrap: str, topic: str, records: int, partitions: int) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "batch.num.messages": 10_000})
    value = b"x" * 100
    for i in range(records):
        while True:
            try:
                producer.produce(topic, value=value, key=str(i).encode(), partition=i % partitions)
                break
            except BufferError:
                producer.poll(0.05)
        if i % 10_000 == 0:
            producer.poll(0)
    if producer.flush(120):
        raise RuntimeError("could not write the benchmark records")


def plain_loop(bootstrap: str, topic: str, records: int, partitions: int,
               at_least_once: bool) -> tuple[int, float, float, float]:
    """confluent-kafka's recommended batch loop: ``consume(MAX_POLL_RECORDS)``, process each record
    (read the fields a tuple carries, count it), commit on the period after processing —
    synchronously for at-least-once, asynchronously otherwise."""
    from confluent_kafka import Consumer, TopicPartition

    start = time.perf_counter()
    cpu = time.process_time()
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"bench-{uuid.uuid4().hex[:8]}",
                         "enable.auto.commit": False, **CONSUMER_PROPS})
    # the start offsets resolved first, as the spout resolves them (a logical OFFSET_BEGINNING
    # in assign costs librdkafka's offset-query cycle, ~0.5 s before the first record here)
    consumer.assign([TopicPartition(topic, p, consumer.get_watermark_offsets(
        TopicPartition(topic, p), timeout=10)[0]) for p in range(partitions)])
    seen = 0
    first = 0.0
    next_commit = start + COMMIT_PERIOD_MS / 1000.0
    while seen < records:
        for msg in consumer.consume(MAX_POLL_RECORDS, 0.1):
            if not seen:
                first = time.perf_counter()
            if msg.error() is None:
                values = [msg.topic(), msg.partition(), msg.offset(), msg.key(), msg.value()]
                if values:
                    seen += 1
        now = time.perf_counter()
        if now >= next_commit and seen:
            next_commit = now + COMMIT_PERIOD_MS / 1000.0
            consumer.commit(asynchronous=not at_least_once)  # the positions of processed records
    end = time.perf_counter()
    cpu = time.process_time() - cpu
    consumer.close()
    return seen, end - start, end - first, cpu


def spout_run(bootstrap: str, topic: str, records: int, acked: bool,
              columns: bool = False) -> tuple[int, float, float, float]:
    """``KafkaSpout → counting bolt``; ``columns``: the columnar bolt, and with ``acked`` the
    spout's ``batch_acking``."""
    counter = Counter(records)
    key = registry.register(counter)
    config = KafkaSpoutConfig(
        bootstrap_servers=bootstrap, group_id=f"bench-{uuid.uuid4().hex[:8]}", topics=[topic],
        processing_guarantee="AT_LEAST_ONCE" if acked else "NO_GUARANTEE",
        consumer_props=dict(CONSUMER_PROPS), offset_commit_period_ms=COMMIT_PERIOD_MS,
        max_poll_records=MAX_POLL_RECORDS, batch_acking=acked and columns)
    builder = TopologyBuilder()
    builder.set_spout("kafka", KafkaSpout.of(config))
    builder.set_bolt("count", ColumnCountingBolt if columns else CountingBolt,
                     kwargs={"key": key}).shuffle_grouping("kafka")
    conf = {"topology.acker.executors": 1 if acked else 0, "topology.max.spout.pending": 5_000}
    try:
        with LocalCluster() as cluster:
            start = time.perf_counter()
            cpu = time.process_time()
            cluster.submit_topology("bench", conf, builder.create_topology())
            deadline = start + 600
            while not counter.done.wait(0.2):
                cluster.wait_for(lambda: True)  # raises a failed worker's error
                if time.perf_counter() > deadline:
                    raise TimeoutError(f"{counter.n} of {records} records counted in 600 s")
            cpu = time.process_time() - cpu
    finally:
        registry.unregister(key)
    return counter.n, counter.last - start, counter.last - counter.first, cpu


def best_of_interleaved(runs: dict[str, Callable[[], tuple[int, float, float, float]]],
                        repeat: int) -> dict[str, tuple[int, float, float, float]]:
    """Per runner: (records, best rate over the whole run, best rate first to last record,
    least CPU seconds of the process — every thread, the client's included — per record)."""
    best: dict[str, tuple[int, float, float, float]] = {}
    for _ in range(repeat):
        for name, run in runs.items():
            n, secs, steady_secs, cpu = run()
            _, rate, steady, cpu_per = best.get(name, (0, 0.0, 0.0, float("inf")))
            best[name] = (n, max(rate, n / secs), max(steady, (n - 1) / max(steady_secs, 1e-9)),
                          min(cpu_per, cpu / n))
    return best


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.kafka_spout", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--bootstrap", default=None, help="use this broker instead of starting one")
    parser.add_argument("--broker", choices=BROKER_CHOICES, default="auto",
                        help="which broker to start without --bootstrap (auto: Apache Kafka when installed)")
    parser.add_argument("--output", type=Path, default=RESULTS / "kafka_spout.json")
    args = parser.parse_args()
    broker = None if args.bootstrap else start_broker(args.broker, echo=print)
    bootstrap = args.bootstrap or broker.bootstrap_servers  # type: ignore[union-attr]
    broker_name = broker.flavour if broker is not None else f"the broker at {bootstrap}"
    try:
        topic = f"bench-{uuid.uuid4().hex[:8]}"
        create_topic(bootstrap, topic, args.partitions)
        fill(bootstrap, topic, args.records, args.partitions)
        n, parts = args.records, args.partitions
        best = best_of_interleaved({
            PLAIN: lambda: plain_loop(bootstrap, topic, n, parts, at_least_once=False),
            PLAIN_ALO: lambda: plain_loop(bootstrap, topic, n, parts, at_least_once=True),
            ACKED: lambda: spout_run(bootstrap, topic, n, acked=True),
            UNACKED: lambda: spout_run(bootstrap, topic, n, acked=False),
            ACKED_BATCHES: lambda: spout_run(bootstrap, topic, n, acked=True, columns=True),
            UNACKED_COLUMNS: lambda: spout_run(bootstrap, topic, n, acked=False, columns=True),
        }, args.repeat)
    finally:
        if broker is not None:
            broker.stop()
    baseline = {PLAIN: PLAIN, PLAIN_ALO: PLAIN_ALO, ACKED: PLAIN_ALO, UNACKED: PLAIN,
                ACKED_BATCHES: PLAIN_ALO, UNACKED_COLUMNS: PLAIN}
    results = {name: {"records": count, "records_per_sec": round(rate, 1), "vs": baseline[name],
                      "vs_plain": round(rate / best[baseline[name]][1], 3),
                      "steady_records_per_sec": round(steady, 1),
                      "steady_vs_plain": round(steady / best[baseline[name]][2], 3),
                      "cpu_us_per_record": round(cpu_per * 1e6, 2),
                      "cpu_vs_plain": round(best[baseline[name]][3] / cpu_per, 3)}
               for name, (count, rate, steady, cpu_per) in best.items()}
    for name, r in results.items():
        print(f"{name}: {r['records_per_sec']:,.0f} records/s ({r['vs_plain']:.2f}x {r['vs']}); "
              f"steady {r['steady_records_per_sec']:,.0f} ({r['steady_vs_plain']:.2f}x); "
              f"CPU {r['cpu_us_per_record']:.2f} µs/record ({r['cpu_vs_plain']:.2f}x)")
    doc = {"broker": broker_name, "records": args.records, "partitions": args.partitions,
           "repeat": args.repeat,
           "python": platform.python_version(), "machine": platform.machine(), "results": results}
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(doc, indent=2) + "\n")


if __name__ == "__main__":
    main()
