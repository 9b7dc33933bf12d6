"""``python -m bench.trident_bench``: the bench word count (``bench_workload``: the same sentences,
every word counted per word) three ways in this process, interleaved, best of ``--rounds``:

- Trident: ``new_stream`` over the bench's transactional sentence spout → ``flat_map`` split →
  ``group_by(word).persistent_aggregate(memory, Count)`` (2 + 2 tasks; transactional state in the
  LocalCluster's memory), transactions of ``--batch`` sentences, 3 in flight;
- transactional: the bench's hand-written transactional word count (split bolt, committer adding
  each batch's counts to in-memory totals once per txid), same spout, batches, tasks, in flight;
- Bytewax (1 worker): ``flat_map`` + ``count_final`` over a source of 1,000-sentence batches.

Each stormpy run is timed from submit to the last batch committed (counts checked exact).
"""

from __future__ import annotations

import argparse
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

TOPOLOGIES = Path(__file__).resolve().parent / "topologies"
if str(TOPOLOGIES) not in sys.path:
    sys.path.insert(0, str(TOPOLOGIES))

import bench_txwordcount as tx  # noqa: E402
from bench_workload import expected_counts, sentences  # noqa: E402

from stormpy.testing import LocalCluster  # noqa: E402
from stormpy.trident import (  # noqa: E402
    Consumer,
    Count,
    StateFactory,
    TridentTopology,
    TridentTuple,
)

_lock = threading.Lock()
LATEST: dict[str, int] = {}


class TridentSentenceSpout(tx.TxSentenceSpout):
    """The transactional bench spout, as an instance carrying its arguments (for new_stream)."""

    @property
    def component_class(self) -> type:
        return type(self)

    @property
    def component_kwargs(self) -> dict[str, Any]:
        return {"count": self.count, "batch_size": self.batch_size}


def split(tuple_: TridentTuple) -> list[list[str]]:
    return [[w] for w in tuple_[0].split()]


class Latest(Consumer):
    """Keeps each word's latest committed count (the new-values stream)."""

    def accept(self, tuple_: TridentTuple) -> None:
        with _lock:
            LATEST[tuple_[0]] = tuple_[1]


def trident_topology(n: int, batch: int, run: int) -> Any:
    t = TridentTopology()
    t.new_stream(f"bench-trident-{run}", TridentSentenceSpout(n, batch)) \
        .flat_map(split, ["word"]).parallelism_hint(2) \
        .group_by(["word"]) \
        .persistent_aggregate(StateFactory.memory(f"bench-{run}"), Count(), ["count"]) \
        .parallelism_hint(2).new_values_stream().peek(Latest())
    return t.build()


CONF = {"topology.max.spout.pending": 3}


def run_trident(n: int, batch: int, run: int) -> float:
    expected = dict(expected_counts(sentences(n)))
    with _lock:
        LATEST.clear()
    spec = trident_topology(n, batch, run)
    with LocalCluster() as cluster:
        t0 = time.perf_counter()
        cluster.submit_topology("trident", CONF, spec)

        def done() -> bool:
            with _lock:
                return expected == LATEST
        cluster.wait_for(done, 600, "the exact counts")
        return time.perf_counter() - t0


def run_transactional(n: int, batch: int) -> float:
    expected = expected_counts(sentences(n))
    total = sum(expected.values())
    tx._TOTALS.clear()
    spec = tx.build(n, batch)
    with LocalCluster() as cluster:
        t0 = time.perf_counter()
        cluster.submit_topology("tx", CONF, spec)
        cluster.wait_for(lambda: sum(t["words"] for t in list(tx._TOTALS.values())) == total,
                         600, "every word committed")
        elapsed = time.perf_counter() - t0
    counts: Counter[str] = Counter()
    for t in tx._TOTALS.values():
        counts.update(t["counts"])
    assert counts == expected
    return elapsed


def run_bytewax(n: int) -> float:
    from bench.runners import bytewax
    _words, elapsed = bytewax(n, "final")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sentences", type=int, default=20_000)
    parser.add_argument("--batch", type=int, action="append",
                        help="sentences per transaction (repeatable; default 1000 and 10000)")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    n, batches = args.sentences, args.batch or [1000, 10_000]
    words = sum(expected_counts(sentences(n)).values())
    best: dict[str, float] = {}
    run = 0
    for _ in range(args.rounds):
        for batch in batches:
            run += 1
            for name, fn in ((f"trident, batch {batch:,}", lambda b=batch, r=run:
                              run_trident(n, b, r)),
                             (f"transactional, batch {batch:,}", lambda b=batch:
                              run_transactional(n, b))):
                elapsed = fn()
                best[name] = min(best.get(name, elapsed), elapsed)
        elapsed = run_bytewax(n)
        best["bytewax (1 worker)"] = min(best.get("bytewax (1 worker)", elapsed), elapsed)
    print(f"{n:,} sentences, {words:,} words, best of {args.rounds} (words/s):")
    bw = words / best["bytewax (1 worker)"]
    for name, elapsed in best.items():
        rate = words / elapsed
        print(f"  {name:32} {rate:>10,.0f}   {rate / bw:.2f}x bytewax")


if __name__ == "__main__":
    main()
