"""Word count whose progress is visible from outside the worker processes (cluster tests).

Every file lives in ``out_dir``:

* ``emitted-<spout task index>.txt`` — one line ``<msg id> <unix time>`` per spout emit;
* ``acked-<spout task index>.txt`` — one line per acked message id. The spout is *durable*: when
  its worker restarts it re-reads this file and re-emits every id of its share not acked yet, so a
  ``kill -9`` loses nothing (duplicates allowed);
* ``counts-<count task id>.txt`` — ``<word> <running count> <unix time>`` per counted word.

The count bolt registers users' metrics of every kind (``words`` counter, ``distinct_words``
gauge, ``word_length`` histogram, ``tuples`` meter, ``execute`` timer) for the operations tests.

``rate`` caps emits per second per spout task (never blocking ``next_tuple``); ``count`` may be
``0`` for an endless stream. ``topology()`` reads ``FILEWC_OUT`` / ``FILEWC_COUNT`` /
``FILEWC_RATE`` / ``FILEWC_WORKERS`` from the environment (for ``stormpy jar``).
"""

from __future__ import annotations

import itertools
import os
import time
from collections import Counter
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from stormpy import BasicBolt, Bolt, Spout, TopologyBuilder, TopologyContext, TopologySpec, Tuple

SENTENCES = [
    "the cow jumped over the moon",
    "an apple a day keeps the doctor away",
    "four score and seven years ago",
    "snow white and the seven dwarfs",
    "i am at two with nature",
]


def sentence(i: int) -> str:
    return SENTENCES[i % len(SENTENCES)]


def read_ids(path: Path) -> set[int]:
    """Message ids recorded in ``path`` (first field of each complete line)."""
    if not path.exists():
        return set()
    out = set()
    for line in path.read_text().splitlines():
        head = line.split(" ", 1)[0]
        if head.isdigit():
            out.add(int(head))
    return out


class FileSentenceSpout(Spout):
    outputs = ["sentence"]

    def __init__(self, out_dir: str, count: int = 100, rate: float = 50.0) -> None:
        self.out_dir = Path(out_dir)
        self.count = count
        self.rate = rate

    def open(self, conf: Mapping[str, Any], context: TopologyContext) -> None:
        index, n = context.task_index, len(context.component_tasks)
        acked_path = self.out_dir / f"acked-{index}.txt"
        done = read_ids(acked_path)
        ids: Iterator[int] = itertools.count(index, n) if self.count == 0 else \
            iter(range(index, self.count, n))
        self.ids = (i for i in ids if i not in done)
        self.replay: list[int] = []
        self.acked_file = open(acked_path, "a", buffering=1)  # noqa: SIM115 - closed in close()
        self.emitted_file = open(self.out_dir / f"emitted-{index}.txt", "a", buffering=1)  # noqa: SIM115
        self.next_at = time.monotonic()

    def next_tuple(self) -> None:
        now = time.monotonic()
        if now < self.next_at:
            return
        i = self.replay.pop() if self.replay else next(self.ids, None)
        if i is None:
            return
        self.next_at = max(self.next_at + 1.0 / self.rate, now - 1.0)
        self.emitted_file.write(f"{i} {time.time():.6f}\n")
        self.emit([sentence(i)], msg_id=i)

    def ack(self, msg_id: int) -> None:
        self.acked_file.write(f"{msg_id}\n")

    def fail(self, msg_id: int) -> None:
        self.replay.append(msg_id)

    def close(self) -> None:
        self.acked_file.close()
        self.emitted_file.close()


class SplitSentence(BasicBolt):
    outputs = ["word"]

    def process(self, tup: Tuple) -> None:
        for word in tup.values[0].split():
            self.emit([word])


class FileWordCount(Bolt):
    outputs = ["word", "count"]

    def __init__(self, out_dir: str) -> None:
        self.out_dir = Path(out_dir)

    def prepare(self, conf: Mapping[str, Any], context: TopologyContext) -> None:
        self.counts: Counter[str] = Counter()
        self.file = open(self.out_dir / f"counts-{context.task_id}.txt", "a", buffering=1)  # noqa: SIM115
        self.words = context.register_counter("words")
        context.register_gauge("distinct_words", lambda: len(self.counts))
        self.lengths = context.register_histogram("word_length")
        self.tuples = context.register_meter("tuples")
        self.timer = context.register_timer("execute")

    def execute(self, tup: Tuple) -> None:
        with self.timer.time():
            self._count(tup)

    def _count(self, tup: Tuple) -> None:
        word = tup.values[0]
        self.words.inc()
        self.lengths.update(len(word))
        self.tuples.mark()
        self.counts[word] += 1
        self.file.write(f"{word} {self.counts[word]} {time.time():.6f}\n")
        self.emit([word, self.counts[word]], anchors=tup)
        self.ack(tup)

    def cleanup(self) -> None:
        self.file.close()


def build(out_dir: str, count: int = 100, rate: float = 50.0) -> TopologySpec:
    builder = TopologyBuilder()
    builder.set_spout("sentences", FileSentenceSpout, 2,
                      kwargs={"out_dir": str(out_dir), "count": count, "rate": rate})
    builder.set_bolt("split", SplitSentence, 2).shuffle_grouping("sentences")
    builder.set_bolt("count", FileWordCount, 2, kwargs={"out_dir": str(out_dir)}) \
        .fields_grouping("split", ["word"])
    return builder.create_topology()


def topology() -> TopologySpec:
    return build(os.environ["FILEWC_OUT"], int(os.environ.get("FILEWC_COUNT", "100")),
                 float(os.environ.get("FILEWC_RATE", "50")))


config = {"topology.workers": int(os.environ.get("FILEWC_WORKERS", "2")),
          "topology.message.timeout.secs": 6}


# -- helpers for the tests (not used by the workers) ---------------------------------------------------
def expected_counts(count: int) -> Counter[str]:
    return Counter(w for i in range(count) for w in sentence(i).split())


def final_counts(out_dir: Path) -> Counter[str]:
    """Highest running count seen per word (exact when no tuple was replayed)."""
    best: Counter[str] = Counter()
    for path in out_dir.glob("counts-*.txt"):
        for line in path.read_text().splitlines():
            parts = line.split()
            if len(parts) == 3 and parts[1].isdigit():
                best[parts[0]] = max(best[parts[0]], int(parts[1]))
    return best


def acked_ids(out_dir: Path) -> set[int]:
    return set().union(*(read_ids(p) for p in out_dir.glob("acked-*.txt")))


def emitted_lines(out_dir: Path) -> int:
    return sum(len(p.read_text().splitlines()) for p in out_dir.glob("emitted-*.txt"))


def first_count_time(out_dir: Path) -> float | None:
    times = [float(line.split()[2]) for p in out_dir.glob("counts-*.txt")
             for line in p.read_text().splitlines() if len(line.split()) == 3]
    return min(times) if times else None
