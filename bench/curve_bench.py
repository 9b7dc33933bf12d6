"""``python -m bench.curve_bench``: the cost of CURVE on worker links, plain and CURVE in one run.

``--cluster``: the bench word count (``bench/cluster_runner.py``: ZooKeeper, Nimbus, two
supervisors with one slot each, so two worker processes with the words crossing between them by
the fields grouping), acking on, submitted alternately without and with
``storm.messaging.curve.enabled`` on the same cluster; words per second and per worker
CPU-second of each round.

Default: the word count's worker-to-worker hop, isolated: two :class:`~stormpy.messaging.zmq_transport.
ZmqTransport` s in this process (a sender thread, the receiver on the main thread), the sender
packing the word tuples of ``bench_workload.sentences`` as a worker packs them (one msgpack
array of ``[dest_task, stream, src_task, root, edge, anchors, [word]]`` records per frame of
``topology.transfer.batch.size`` tuples), the receiver unpacking every frame and counting the
words. Rounds alternate plain and CURVE, so both see the same machine load; the rate is tuples
(words) per second from the first send to the last word counted. Prints JSON with every round and
the median of each mode (a best-effort figure: the machine is shared).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import threading
import time
from pathlib import Path
from typing import Any

import msgpack

TOPOLOGIES = Path(__file__).resolve().parent / "topologies"
if str(TOPOLOGIES) not in sys.path:
    sys.path.insert(0, str(TOPOLOGIES))

from bench_workload import sentences  # noqa: E402

from stormpy.config import DEFAULTS  # noqa: E402
from stormpy.messaging.curve import CurveKeyPair  # noqa: E402
from stormpy.messaging.zmq_transport import ZmqTransport  # noqa: E402

BATCH = int(DEFAULTS["topology.transfer.batch.size"])


def frames_of(n_sentences: int, batch: int = BATCH) -> tuple[list[bytes], int]:
    """The packed frames carrying every word of ``n_sentences`` sentences, and the word count."""
    records: list[list[Any]] = []
    frames: list[bytes] = []
    packer = msgpack.Packer(use_bin_type=True)
    words = 0
    for i, line in enumerate(sentences(n_sentences)):
        for word in line.split():
            records.append([2, "default", 1, 1000 + i, 77 + words, None, [word]])
            words += 1
            if len(records) == batch:
                frames.append(packer.pack(records))
                records = []
    if records:
        frames.append(packer.pack(records))
    return frames, words


def one_round(frames: list[bytes], words: int, keys: CurveKeyPair | None) -> tuple[float, float]:
    """Tuples per second and per CPU-second of this process (every thread: the sender, the
    receiver, ZeroMQ's I/O threads doing the encryption) through one sender → receiver link
    (``keys``: CURVE, else plain)."""
    receiver = ZmqTransport("127.0.0.1", 0, curve=keys)
    sender = ZmqTransport("127.0.0.1", 0, curve=keys)
    try:
        sender.set_peers({"r": f"127.0.0.1:{receiver.port}"})
        started = threading.Event()
        t0 = [0.0]

        def send_all() -> None:
            t0[0] = time.perf_counter()
            started.set()
            for frame in frames:
                while not sender.send("r", frame):
                    time.sleep(0.0001)

        thread = threading.Thread(target=send_all, daemon=True)
        cpu0 = time.process_time()
        thread.start()
        started.wait()
        counted = 0
        unpack = msgpack.unpackb
        while counted < words:
            for frame in receiver.receive(64):
                counted += sum(len(record[6]) for record in unpack(frame, raw=False))
            if counted < words:
                receiver.wait(0.01)
        elapsed = time.perf_counter() - t0[0]
        cpu = time.process_time() - cpu0
        thread.join()
        return words / elapsed, words / cpu
    finally:
        sender.close()
        receiver.close()


def cluster_rounds(n_sentences: int, rounds: int) -> dict[str, Any]:
    """Alternate plain and CURVE word counts on one two-worker cluster (see the module doc)."""
    from bench.cluster_runner import run_topology, two_worker_cluster

    runs: dict[str, list[dict[str, Any]]] = {"plain": [], "curve": []}
    with two_worker_cluster() as (cluster, bundle):
        for i in range(rounds):
            for mode in ("plain", "curve"):
                conf = {"storm.messaging.curve.enabled": mode == "curve"}
                runs[mode].append(run_topology(cluster, bundle, f"curve-bench-{mode}-{i}", n_sentences,
                                               acking=True, conf=conf))
    out: dict[str, Any] = {"sentences": n_sentences, "words": runs["plain"][0]["words"]}
    for mode, results in runs.items():
        rates = [r["words"] / r["seconds"] for r in results]
        per_cpu = [r["words"] / r["cpu_seconds"] for r in results if r.get("cpu_seconds")]
        out[mode] = {"rounds": [round(x) for x in rates], "words_per_sec": round(statistics.median(rates)),
                     "words_per_cpu_sec": round(statistics.median(per_cpu)) if per_cpu else None,
                     "failed": sum(r["failed"] for r in results)}
    out["curve_cost_percent"] = round(
        100 * (1 - out["curve"]["words_per_sec"] / out["plain"]["words_per_sec"]), 1)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sentences", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--cluster", action="store_true",
                        help="the word count on a two-worker cluster instead of the isolated hop")
    args = parser.parse_args(argv)
    if args.cluster:
        print(json.dumps(cluster_rounds(args.sentences, args.rounds), indent=2))
        return 0
    frames, words = frames_of(args.sentences)
    keys = CurveKeyPair.generate()
    rates: dict[str, list[float]] = {"plain": [], "curve": []}
    per_cpu: dict[str, list[float]] = {"plain": [], "curve": []}
    one_round(frames[:10], min(words, 10 * BATCH), None)  # warm-up
    for _ in range(args.rounds):
        for mode, mode_keys in (("plain", None), ("curve", keys)):
            rate, cpu_rate = one_round(frames, words, mode_keys)
            rates[mode].append(rate)
            per_cpu[mode].append(cpu_rate)
    plain, curve = statistics.median(rates["plain"]), statistics.median(rates["curve"])
    plain_cpu, curve_cpu = statistics.median(per_cpu["plain"]), statistics.median(per_cpu["curve"])
    print(json.dumps({
        "words": words, "frames": len(frames), "batch": BATCH,
        "rounds": {k: [round(x) for x in v] for k, v in rates.items()},
        "plain_tuples_per_sec": round(plain), "curve_tuples_per_sec": round(curve),
        "curve_cost_percent": round(100 * (1 - curve / plain), 1),
        "plain_tuples_per_cpu_sec": round(plain_cpu), "curve_tuples_per_cpu_sec": round(curve_cpu),
        "curve_cpu_cost_percent": round(100 * (1 - curve_cpu / plain_cpu), 1),
    }, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
