"""Records/s and commit latency of the exactly-once Kafka sink against the at-least-once writers.

    python -m bench.kafka_eos [--records 100000] [--batch 1000] [--partitions 4] [--repeat 2]
                              [--bootstrap HOST:PORT] [--broker auto|kafka|tansu]

In one run, interleaved (A B C, A B C, ...) so the machine's load hits every side alike, best rate
of ``--repeat``; each run writes ``--records`` records (key: the record number, value: 100 bytes)
to a fresh topic of ``--partitions`` partitions, with the same producer properties
(``acks=all``, ``linger.ms=5``):

* **transactional sink** — ``KafkaTransactionalSink.commit_batch(txid, batch)`` for consecutive
  txids, ``--batch`` records each: one Kafka transaction per batch (records + the txid marker in
  the commit log, ``commit_transaction``), what a Trident ``partition_persist`` task or a
  ``KafkaTransactionalCommitterBolt`` task does per committed batch;
* **at-least-once sink** — the same calls with ``exactly_once=False`` (idempotent producer,
  produce, ``flush`` per batch: no transaction, no marker);
* **spout → KafkaBolt** — the at-least-once bolt in a topology (``bench.kafka_bolt``'s runner:
  each tuple acked on its delivery report); no batch commit, so no commit latency.

Commit latency: the wall time of each ``commit_batch`` (from the first ``produce`` to the commit
or flush returning), p50 and p99 over every batch of every repeat. Results go to
bench/results/kafka_eos.json.
"""

from __future__ import annotations

import argparse
import json
import platform
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.kafka_bolt import VALUE, bolt_run
from stormpy.connectors.kafka._transactional_sink import KafkaTransactionalConfig, KafkaTransactionalSink
from stormpy.testing._kafka import BROKER_CHOICES, create_topic, start_broker

RESULTS = Path(__file__).parent / "results"
EOS = "transactional sink (a Kafka transaction per batch)"
ALO = "at-least-once sink (produce + flush per batch)"
BOLT = "spout -> KafkaBolt (acked on delivery)"
PROPS = {"acks": "all", "linger.ms": 5, "batch.num.messages": 10_000,
         "queue.buffering.max.messages": 100_000}


def sink_run(bootstrap: str, topic: str, records: int, batch: int,
             exactly_once: bool) -> tuple[int, float, list[float]]:
    """(records written, seconds, per-batch commit seconds)."""
    cfg = KafkaTransactionalConfig(bootstrap, topic=topic, exactly_once=exactly_once,
                                   transactional_id_prefix=f"bench-{uuid.uuid4().hex[:8]}",
                                   producer_props=dict(PROPS))
    sink = KafkaTransactionalSink(cfg, f"{cfg.transactional_id_prefix}-bench-sink-0")
    latencies: list[float] = []
    written = 0
    try:
        sink.open()
        start = time.perf_counter()
        for txid, first in enumerate(range(0, records, batch), start=1):
            rows = [(topic, str(i).encode(), VALUE) for i in range(first, min(first + batch, records))]
            t0 = time.perf_counter()
            sink.commit_batch(txid, rows)
            latencies.append(time.perf_counter() - t0)
            written += len(rows)
        secs = time.perf_counter() - start
    finally:
        sink.close()
    return written, secs, latencies


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else 0.0


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.kafka_eos", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--batch", type=int, default=1_000)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--bootstrap", default=None, help="use this broker instead of starting one")
    parser.add_argument("--broker", choices=BROKER_CHOICES, default="auto")
    parser.add_argument("--output", type=Path, default=RESULTS / "kafka_eos.json")
    args = parser.parse_args()
    broker = None if args.bootstrap else start_broker(args.broker, echo=print)
    bootstrap = args.bootstrap or broker.bootstrap_servers  # type: ignore[union-attr]
    broker_name = broker.flavour if broker is not None else f"the broker at {bootstrap}"

    def fresh_topic() -> str:
        return create_topic(bootstrap, f"bench-eos-{uuid.uuid4().hex[:8]}", args.partitions)

    n, batch = args.records, args.batch
    runs: dict[str, Callable[[], tuple[int, float, list[float]]]] = {
        EOS: lambda: sink_run(bootstrap, fresh_topic(), n, batch, True),
        ALO: lambda: sink_run(bootstrap, fresh_topic(), n, batch, False),
        BOLT: lambda: (lambda r: (r[0], r[1], []))(bolt_run(bootstrap, fresh_topic(), n, "all")),
    }
    rates: dict[str, float] = {}
    lat: dict[str, list[float]] = {name: [] for name in runs}
    counts: dict[str, int] = {}
    try:
        for _ in range(args.repeat):
            for name, run in runs.items():
                count, secs, latencies = run()
                counts[name] = count
                rates[name] = max(rates.get(name, 0.0), count / secs)
                lat[name].extend(latencies)
    finally:
        if broker is not None:
            broker.stop()
    results: dict[str, dict[str, Any]] = {}
    for name in runs:
        r: dict[str, Any] = {"records": counts[name], "records_per_sec": round(rates[name], 1)}
        if lat[name]:
            r["commit_p50_ms"] = round(percentile(lat[name], 0.5) * 1000, 1)
            r["commit_p99_ms"] = round(percentile(lat[name], 0.99) * 1000, 1)
            r["batches"] = len(lat[name])
        results[name] = r
        extra = (f"; commit p50 {r['commit_p50_ms']} ms, p99 {r['commit_p99_ms']} ms"
                 if lat[name] else "")
        print(f"{name}: {r['records_per_sec']:,.0f} records/s{extra}")
    doc = {"broker": broker_name, "records": n, "batch": batch, "partitions": args.partitions,
           "repeat": args.repeat, "python": platform.python_version(),
           "machine": platform.machine(), "results": results}
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(doc, indent=2) + "\n")


if __name__ == "__main__":
    main()
