"""``python -m bench.kinesis_tracker``: the cost of InflightRecordTracker.on_emit + on_ack per
record (target: at most 2 µs), in order and with acks arriving shuffled within a window.

The figure is CPU time of this process (``time.process_time``), so that a machine shared with
other work does not inflate it; wall time is printed beside it."""

from __future__ import annotations

import argparse
import random
import time

from stormpy.connectors.kinesis import InflightRecordTracker, KinesisRecord

BASE = 49590338271490256608559692538361571095921575989136588898


def make_records(n: int) -> list[KinesisRecord]:
    return [KinesisRecord("shardId-000000000000", str(BASE + 2 * i), "pk", b"") for i in range(n)]


def run(records: list[KinesisRecord], window: int, shuffle: bool) -> tuple[float, float]:
    """(CPU, wall) seconds per record for emit + ack with ``window`` records in flight."""
    rng = random.Random(7)
    tracker = InflightRecordTracker("shardId-000000000000", 3)
    seqs = [r.sequence_number for r in records]
    start, cpu_start = time.perf_counter(), time.process_time()
    for lo in range(0, len(records), window):
        for r in records[lo:lo + window]:
            tracker.on_emit(r, False)
        batch = seqs[lo:lo + window]
        if shuffle:
            rng.shuffle(batch)
        for s in batch:
            tracker.on_ack(s)
    cpu, wall = time.process_time() - cpu_start, time.perf_counter() - start
    assert tracker.in_flight == 0 and tracker.checkpoint == seqs[-1]
    return cpu / len(records), wall / len(records)


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.kinesis_tracker", description=__doc__)
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--window", type=int, default=500, help="records in flight at once")
    parser.add_argument("--repeat", type=int, default=5, help="best of N")
    args = parser.parse_args()
    records = make_records(args.records)
    for shuffle in (False, True):
        runs = [run(records, args.window, shuffle) for _ in range(args.repeat)]
        cpu, wall = min(r[0] for r in runs), min(r[1] for r in runs)
        order = "shuffled acks" if shuffle else "in-order acks"
        print(f"on_emit + on_ack, {order:13}: {cpu * 1e6:.2f} µs/record CPU, {wall * 1e6:.2f} µs "
              f"wall ({args.records} records, window {args.window}, best of {args.repeat})")


if __name__ == "__main__":
    main()
