"""The fixed word-count workload every runner processes: the same sentences, the same count."""

from __future__ import annotations

import itertools
import random
from collections import Counter
from collections.abc import Iterator

VOCABULARY = [
    "the", "cow", "jumped", "over", "moon", "an", "apple", "a", "day", "keeps", "doctor", "away",
    "four", "score", "and", "seven", "years", "ago", "snow", "white", "dwarfs", "i", "am", "at",
    "two", "with", "nature", "storm", "python", "stream", "tuple", "bolt", "spout", "acker",
    "nimbus", "worker", "zookeeper", "spark", "batch",
]


def _generate(n: int, seed: int) -> Iterator[str]:
    rnd = random.Random(seed)
    for _ in range(n):
        yield " ".join(rnd.choice(VOCABULARY) for _ in range(rnd.randint(4, 10)))


#: (n, seed) -> sentences, the last few workloads generated in this process
_MADE: dict[tuple[int, int], tuple[str, ...]] = {}


def sentences(n: int, seed: int = 7) -> tuple[str, ...]:
    """``n`` deterministic sentences of 4 to 10 words. Cached: every runner generates the
    workload before its clock starts (a local-mode spout's ``open`` then finds it ready, as
    Bytewax's source gets a ready list), so no runner is timed generating it."""
    made = _MADE.get((n, seed))
    if made is None:
        if len(_MADE) >= 4:
            _MADE.pop(next(iter(_MADE)))
        made = _MADE[(n, seed)] = tuple(_generate(n, seed))
    return made


def sentence_stream(n: int, index: int, parts: int, seed: int = 7) -> Iterator[str]:
    """The sentences of ``sentence_share`` generated one at a time, none kept: the input of a
    rate-limited spout, which holds only what it has in flight (as a log consumer would)."""
    return itertools.islice(_generate(n, seed), index, None, parts)


def sentence_share(n: int, index: int, parts: int, seed: int = 7) -> list[str]:
    """``sentences(n)[index::parts]`` (one of ``parts`` partitions), taken from the cache when
    this process has it, else generated one sentence at a time without keeping the others: a
    spout task in a cluster worker holds only its own partition of the input, as a consumer of
    one partition of a log would (the worker's memory is measured; the input is not the
    worker's)."""
    made = _MADE.get((n, seed))
    if made is not None:
        return list(made[index::parts])
    return list(sentence_stream(n, index, parts, seed))


def expected_counts(lines: tuple[str, ...]) -> Counter[str]:
    return Counter(w for line in lines for w in line.split())
