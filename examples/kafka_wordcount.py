"""Kafka word count: sentences from a topic → split → count → running counts to another topic.

    stormpy dev-kafka --port 9092 &                          # a broker for development
    python examples/kafka_wordcount.py seed 1000             # create the topics, write sentences
    stormpy local examples kafka_wordcount:build --idle-stop 2
    python examples/kafka_wordcount.py counts                # the latest count of every word

On a cluster: ``stormpy jar examples kafka_wordcount:build --name kwc``. The broker and topics come
from the environment when the topology is built (``KAFKA_BOOTSTRAP`` 127.0.0.1:9092,
``KAFKA_INPUT_TOPIC`` sentences, ``KAFKA_OUTPUT_TOPIC`` word-counts, ``KAFKA_GROUP``
kafka-wordcount). The spout is AT_LEAST_ONCE and the bolt acks a count only once Kafka has it, so
every sentence is counted at least once even across worker crashes (a replay may count again).
"""

from __future__ import annotations

import os
import sys
from collections import Counter
from collections.abc import Mapping
from typing import Any

from stormpy import BasicBolt, Bolt, TopologyBuilder, TopologyContext, Tuple
from stormpy.connectors.kafka import KafkaBolt, KafkaBoltConfig, KafkaSpout, KafkaSpoutConfig

SENTENCES = [
    "the cow jumped over the moon",
    "an apple a day keeps the doctor away",
    "four score and seven years ago",
    "snow white and the seven dwarfs",
    "i am at two with nature",
]


def settings() -> dict[str, str]:
    env = os.environ.get
    return {"bootstrap": env("KAFKA_BOOTSTRAP", "127.0.0.1:9092"),
            "input": env("KAFKA_INPUT_TOPIC", "sentences"),
            "output": env("KAFKA_OUTPUT_TOPIC", "word-counts"),
            "group": env("KAFKA_GROUP", "kafka-wordcount")}


class SplitSentence(BasicBolt):
    """Splits the record value (a sentence) into words, anchored to the record's tuple."""

    outputs = ["word"]

    def process(self, tup: Tuple) -> None:
        for word in (tup.value("value") or "").split():
            self.emit([word])


class WordCount(Bolt):
    """Running count per word (fields grouping: one task per word); emits ``word, count``."""

    outputs = ["word", "count"]

    def prepare(self, conf: Mapping[str, Any], context: TopologyContext) -> None:
        self.counts: Counter[str] = Counter()

    def execute(self, tup: Tuple) -> None:
        word = tup.values[0]
        self.counts[word] += 1
        self.emit([word, self.counts[word]], anchors=tup)
        self.ack(tup)


def build() -> TopologyBuilder:
    s = settings()
    spout = KafkaSpoutConfig(
        bootstrap_servers=s["bootstrap"], group_id=s["group"], topics=[s["input"]],
        record_translator="stormpy.connectors.kafka:StringRecordTranslator",
        # commit each second; re-read partitions every 10 s (so `--idle-stop 2` can see it idle)
        offset_commit_period_ms=1_000, partition_refresh_period_ms=10_000)
    sink = KafkaBoltConfig(bootstrap_servers=s["bootstrap"], topic=s["output"], key_field="word",
                           message_field="count", producer_props={"acks": "all", "linger.ms": 5})
    builder = TopologyBuilder()
    builder.set_spout("sentences", KafkaSpout.of(spout), 2)
    builder.set_bolt("split", SplitSentence, 2).shuffle_grouping("sentences")
    builder.set_bolt("count", WordCount, 2).fields_grouping("split", ["word"])
    # one producer per word keeps each word's counts in order in its partition
    builder.set_bolt("to-kafka", KafkaBolt.of(sink), 2).fields_grouping("count", ["word"])
    return builder


config = {"topology.max.spout.pending": 1000}


def seed(count: int) -> None:
    """Create both topics (2 partitions) and write ``count`` sentences."""
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    s = settings()
    admin = AdminClient({"bootstrap.servers": s["bootstrap"]})
    existing = admin.list_topics(timeout=10).topics
    new = [NewTopic(t, 2) for t in (s["input"], s["output"]) if t not in existing]
    for future in admin.create_topics(new).values() if new else ():
        future.result(30)
    producer = Producer({"bootstrap.servers": s["bootstrap"], "linger.ms": 5})
    for i in range(count):
        producer.produce(s["input"], SENTENCES[i % len(SENTENCES)].encode())
        producer.poll(0)
    left = producer.flush(30)
    print(f"wrote {count - left} sentences to {s['input']} on {s['bootstrap']}")


def counts() -> dict[str, int]:
    """The highest count written per word (the latest, as counts only grow)."""
    from confluent_kafka import Consumer, TopicPartition

    s = settings()
    c = Consumer({"bootstrap.servers": s["bootstrap"], "group.id": "kafka-wordcount-reader",
                  "enable.auto.commit": False})
    try:
        parts = c.list_topics(s["output"], timeout=10).topics[s["output"]].partitions
        c.assign([TopicPartition(s["output"], p, 0) for p in parts])
        out: dict[str, int] = {}
        idle = 0
        while idle < 2:  # read until two polls in a row bring nothing
            batch = c.consume(500, 1.0)
            idle = 0 if batch else idle + 1
            for msg in batch:
                if msg.error() is None:
                    word = msg.key().decode()
                    out[word] = max(out.get(word, 0), int(msg.value()))
        return out
    finally:
        c.close()


if __name__ == "__main__":
    command = sys.argv[1] if len(sys.argv) > 1 else ""
    if command == "seed":
        seed(int(sys.argv[2]) if len(sys.argv) > 2 else 1000)
    elif command == "counts":
        for word, n in sorted(counts().items(), key=lambda kv: (-kv[1], kv[0])):
            print(f"{word:>10} {n}")
    else:
        sys.exit("usage: python examples/kafka_wordcount.py seed [N] | counts")
