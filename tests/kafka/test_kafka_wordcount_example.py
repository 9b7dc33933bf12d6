"""examples/kafka_wordcount.py runs with ``stormpy local`` against the test broker: every word of
the seeded sentences gets its full count in the output topic."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from collections import Counter
from pathlib import Path

import pytest

from stormpy.testing._kafka import KafkaBroker

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.kafka


def test_kafka_wordcount_counts_every_word_locally(kafka_broker: KafkaBroker) -> None:
    tag = uuid.uuid4().hex[:8]
    env = {**os.environ, "KAFKA_BOOTSTRAP": kafka_broker.bootstrap_servers,
           "KAFKA_INPUT_TOPIC": f"sentences-{tag}", "KAFKA_OUTPUT_TOPIC": f"counts-{tag}",
           "KAFKA_GROUP": f"kwc-{tag}", "COLUMNS": "200",
           "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")])}
    example = str(ROOT / "examples" / "kafka_wordcount.py")
    seeded = subprocess.run([sys.executable, example, "seed", "200"], env=env, capture_output=True,
                            text=True, timeout=60)
    assert seeded.returncode == 0, seeded.stderr
    run = subprocess.run([sys.executable, "-m", "stormpy.cli", "local", "examples",
                          "kafka_wordcount:build", "--idle-stop", "2", "--ttl", "120"],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=180)
    assert run.returncode == 0, run.stderr[-3000:]
    assert "to-kafka" in run.stdout
    import kafka_wordcount as kwc
    expected = Counter(w for i in range(200) for w in kwc.SENTENCES[i % len(kwc.SENTENCES)].split())
    old = {k: os.environ.get(k) for k in ("KAFKA_BOOTSTRAP", "KAFKA_OUTPUT_TOPIC")}
    os.environ.update(KAFKA_BOOTSTRAP=kafka_broker.bootstrap_servers, KAFKA_OUTPUT_TOPIC=f"counts-{tag}")
    try:
        got = kwc.counts()
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    assert got == dict(expected)
