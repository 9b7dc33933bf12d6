"""The Trident word count from Kafka (KafkaOpaqueSpout, opaque SQLite state) on a real cluster:
records written while it runs, worker processes killed with SIGKILL several times, the counts
at the end equal a plain count of the topic's records.

The Kafka-to-Kafka variant writes each new count to an output topic through the exactly-once
sink, through three worker kill -9s and a broker kill -9 and restart: read with read_committed,
every (word, count) record is there exactly once and the last count of each word is exact."""

from __future__ import annotations

import os
import signal
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import trident_kafka
import trident_kafka_eos
from cluster_kit import running_cluster
from test_kafka_transactional_sink import read_topic, word_counts

from stormpy.bundle import build_bundle
from stormpy.cluster.zkserver import ZooKeeperServer
from stormpy.state import SqliteStore
from stormpy.testing import WaitTimeout, wait_for
from stormpy.testing._cluster import ProcessCluster
from stormpy.testing._kafka import ApacheKafkaBroker, KafkaBroker
from stormpy.trident import OPAQUE, MapState

TOPOLOGIES = Path(__file__).resolve().parent / "cluster_topologies"


pytestmark = [pytest.mark.timeout(300), pytest.mark.zookeeper, pytest.mark.cluster,
              pytest.mark.kafka]
LINES = ["the cow jumped over the moon", "four score and seven years ago",
         "snow white and the seven dwarfs", "an apple a day keeps the doctor away"]


#: FAST_TIMEOUTS, but a worker whose loop stalls a few seconds on a loaded host (a worker's
#: start opens ZooKeeper, SQLite and Kafka clients) is not restarted for it: the kills these
#: tests make are SIGKILLs, which the supervisor sees at once, not missed heartbeats
CONF = {"supervisor.worker.timeout.secs": 10, "nimbus.task.timeout.secs": 15,
        "nimbus.supervisor.timeout.secs": 15}


@pytest.fixture(scope="module")
def cluster(zookeeper: ZooKeeperServer, kafka_broker: KafkaBroker,
            tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProcessCluster]:
    with running_cluster(zookeeper, tmp_path_factory.mktemp("trident-kafka"), "tk", conf=CONF) as c:
        yield c


def counts(db: Path) -> dict[str, int]:
    if not db.exists():
        return {}
    state = MapState(SqliteStore(db, "trident_state", segments=("counts",)), OPAQUE)
    try:
        return {key[0]: value for key, value in state.items()}
    finally:
        state.close()


def test_kill9_trident_kafka_word_count_is_exact(cluster: ProcessCluster,
                                                 kafka_broker: KafkaBroker,
                                                 kafka_topic: object, produce: object,
                                                 tmp_path: Path) -> None:
    topic = kafka_topic(4)  # type: ignore[operator]
    db = tmp_path / "counts.sqlite"
    spec = trident_kafka.build(kafka_broker.bootstrap_servers, topic, str(db),
                               f"tk-{uuid.uuid4().hex[:8]}")
    bundle = build_bundle(TOPOLOGIES, tmp_path / "trident_kafka.zip").path
    conf = {"topology.workers": 2, "topology.message.timeout.secs": 6,
            "topology.max.spout.pending": 3,
            "transactional.zookeeper.root": f"/stormpy-tests/tk-{uuid.uuid4().hex[:8]}"}
    tid = cluster.client().submit("trident-kafka", bundle, spec.to_doc(), conf)
    sent: Counter[str] = Counter()

    def send(start: int, count: int) -> None:
        records = [(i % 4, None, LINES[i % 4].encode()) for i in range(start, start + count)]
        produce(topic, records)  # type: ignore[operator]
        sent.update(w for _p, _k, v in records for w in v.decode().split())

    send(0, 800)
    wait_for(lambda: sum(counts(db).values()) > 0, 120, "the first commit")
    kills = 0
    for round_ in range(3):
        workers = wait_for(lambda: cluster.worker_processes(tid)
                           if len(cluster.worker_processes(tid)) == 2 else None,
                           90, "two worker processes")
        pid = sorted(workers)[round_ % 2][0]
        os.kill(pid, signal.SIGKILL)
        kills += 1
        send(800 + 400 * round_, 400)
        progress = sum(counts(db).values())
        wait_for(lambda p=progress: sum(counts(db).values()) > p, 120, "a commit after the kill")
    try:
        wait_for(lambda: counts(db) == dict(sent), 180, "the exact counts")
    except WaitTimeout:
        got = counts(db)
        diff = {w: (got.get(w), sent[w]) for w in sent if got.get(w) != sent[w]}
        raise AssertionError(f"counts differ (stored, sent): {diff}") from None
    cluster.client().kill("trident-kafka", 0)
    assert kills == 3
    assert counts(db) == dict(sent)


@pytest.mark.timeout(720)  # its waits (cluster start, three kills, a broker restart) add up
def test_kill9_kafka_to_kafka_word_count_is_written_exactly_once(
        cluster: ProcessCluster, spare_broker: Callable[..., ApacheKafkaBroker],
        tmp_path: Path) -> None:
    from confluent_kafka import Producer

    broker = spare_broker().start()
    bootstrap = broker.bootstrap_servers
    source = broker.create_topic(f"eos-in-{uuid.uuid4().hex[:8]}", 4)
    output = broker.create_topic(f"eos-out-{uuid.uuid4().hex[:8]}", 2)
    spec = trident_kafka_eos.build(bootstrap, source, output, str(tmp_path / "counts.sqlite"),
                                   f"eos-{uuid.uuid4().hex[:8]}", f"eos-{uuid.uuid4().hex[:8]}")
    bundle = build_bundle(TOPOLOGIES, tmp_path / "trident_kafka_eos.zip").path
    conf = {"topology.workers": 2, "topology.message.timeout.secs": 6,
            "topology.max.spout.pending": 3,
            "transactional.zookeeper.root": f"/stormpy-tests/eos-{uuid.uuid4().hex[:8]}"}
    tid = cluster.client().submit("kafka-eos", bundle, spec.to_doc(), conf)
    sent: Counter[str] = Counter()

    def send(start: int, count: int) -> None:
        producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
        for i in range(start, start + count):
            producer.produce(source, value=LINES[i % 4].encode(), partition=i % 4)
        assert producer.flush(60) == 0
        sent.update(w for i in range(start, start + count) for w in LINES[i % 4].split())

    def output_records() -> int:
        return len(read_topic(bootstrap, output))

    send(0, 800)
    wait_for(lambda: output_records() > 0, 120, "the first committed output", interval=1.0)
    for round_ in range(3):
        workers = wait_for(lambda: cluster.worker_processes(tid)
                           if len(cluster.worker_processes(tid)) == 2 else None,
                           90, "two worker processes")
        os.kill(sorted(workers)[round_ % 2][0], signal.SIGKILL)
        send(800 + 400 * round_, 400)
        progress = output_records()
        wait_for(lambda p=progress: output_records() > p, 120, "output after the kill",
                 interval=1.0)
    broker.kill()
    broker.restart()
    send(2000, 400)

    def exact() -> bool:
        return word_counts(read_topic(bootstrap, output))[0] == dict(sent)
    try:
        wait_for(exact, 180, "the exact counts in the output topic", interval=1.0)
    except WaitTimeout:
        got, duplicates = word_counts(read_topic(bootstrap, output))
        diff = {w: (got.get(w), sent[w]) for w in sent if got.get(w) != sent[w]}
        pytest.fail(f"output counts differ (written, sent): {diff}; {duplicates} (word, count) "
                    f"records written more than once")
    finally:
        cluster.client().kill("kafka-eos", 0)
    last, duplicates = word_counts(read_topic(bootstrap, output))
    assert last == dict(sent)
    assert duplicates == 0, f"{duplicates} (word, count) records written more than once"
