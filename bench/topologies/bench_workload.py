"""The fixed word-count workload every runner processes: the same sentences, the same count."""

from __future__ import annotations

import random
from collections import Counter
from functools import lru_cache

VOCABULARY = [
    "the", "cow", "jumped", "over", "moon", "an", "apple", "a", "day", "keeps", "doctor", "away",
    "four", "score", "and", "seven", "years", "ago", "snow", "white", "dwarfs", "i", "am", "at",
    "two", "with", "nature", "storm", "python", "stream", "tuple", "bolt", "spout", "acker",
    "nimbus", "worker", "zookeeper", "spark", "batch",
]


@lru_cache(maxsize=4)
def sentences(n: int, seed: int = 7) -> tuple[str, ...]:
    """``n`` deterministic sentences of 4 to 10 words. Cached: every runner generates the
    workload before its clock starts (a local-mode spout's ``open`` then finds it ready, as
    Bytewax's source gets a ready list), so no runner is timed generating it."""
    rnd = random.Random(seed)
    return tuple(" ".join(rnd.choice(VOCABULARY) for _ in range(rnd.randint(4, 10)))
                 for _ in range(n))


def expected_counts(lines: tuple[str, ...]) -> Counter[str]:
    return Counter(w for line in lines for w in line.split())
