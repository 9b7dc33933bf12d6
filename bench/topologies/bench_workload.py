"""The fixed word-count workload every runner processes: the same sentences, the same count."""

from __future__ import annotations

import random
from collections import Counter

VOCABULARY = [
    "the", "cow", "jumped", "over", "moon", "an", "apple", "a", "day", "keeps", "doctor", "away",
    "four", "score", "and", "seven", "years", "ago", "snow", "white", "dwarfs", "i", "am", "at",
    "two", "with", "nature", "storm", "python", "stream", "tuple", "bolt", "spout", "acker",
    "nimbus", "worker", "zookeeper", "spark", "batch",
]


def sentences(n: int, seed: int = 7) -> list[str]:
    """``n`` deterministic sentences of 4 to 10 words."""
    rnd = random.Random(seed)
    return [" ".join(rnd.choice(VOCABULARY) for _ in range(rnd.randint(4, 10))) for _ in range(n)]


def expected_counts(lines: list[str]) -> Counter[str]:
    return Counter(w for line in lines for w in line.split())
