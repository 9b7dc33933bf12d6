"""The docker-compose cluster as a user runs it (README "Running a cluster"): the images of
``make images``, ``docker-compose up`` with every service healthy, topologies submitted from the
host with ``stormpy jar --nimbus 127.0.0.1:<published port>``.

One cluster for the module, the scenarios in order: the word count with every tuple acked; a
supervisor container killed mid-run (its workers move to the other supervisor, no id of a reliable
spout lost); the leading Nimbus stopped (the other leads, a submit to it succeeds); the Spark
flagship on the compose Spark cluster (accounting check OK); ``down -v`` leaving no container,
network or volume of the project behind."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import ledger  # the partition tests' ledger topology, on pytest's pythonpath
import pytest
from compose_kit import ROOT, SPARK_SERVICES, ComposeCluster, wait_acked

from stormpy.host.waiting import wait_for

pytestmark = [pytest.mark.compose, pytest.mark.timeout(1800)]

LEDGER = ROOT / "tests" / "partitions" / "ledger_topology"

LEDGER_IDS = 400
FLAGSHIP_LINES = 6000  # compose_flagship.LINES


@pytest.fixture(scope="module")
def bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The code submitted: the examples, the ledger topology and the shared-dir flagship."""
    out = tmp_path_factory.mktemp("bundle") / "code"
    shutil.copytree(ROOT / "examples", out, ignore=shutil.ignore_patterns("output", "__pycache__"))
    shutil.copy(LEDGER / "ledger.py", out / "ledger.py")
    shutil.copy(Path(__file__).parent / "topologies" / "compose_flagship.py", out)
    return out


@pytest.fixture(scope="module")
def cluster(compose_cluster: ComposeCluster) -> Iterator[ComposeCluster]:
    yield compose_cluster


def leader(cluster: ComposeCluster) -> str | None:
    rows = cluster.api("/api/v1/nimbus/summary")["nimbuses"]
    leaders = [r["host"] for r in rows if r["status"] == "Leader"]
    return leaders[0] if len(leaders) == 1 else None


def leading(cluster: ComposeCluster) -> str:
    """``127.0.0.1:<published port>`` of the leading Nimbus: the CLI follows the leader by its
    compose host name (nimbus, nimbus2), which the host does not resolve, so the host's CLI talks
    to the leader's published port."""
    return cluster.nimbus(wait_for(lambda: leader(cluster), 120, "a leading Nimbus", interval=1,
                                   ignore=(OSError,)))


def test_every_nimbus_listed_and_the_ui_answers(cluster: ComposeCluster) -> None:
    rows = wait_for(lambda: (r := cluster.api("/api/v1/nimbus/summary")["nimbuses"]) and
                    len(r) == 2 and r, 120, "both Nimbus hosts in the UI", interval=1,
                    ignore=(OSError,))
    assert sorted(r["status"] for r in rows) == ["Leader", "Not a Leader"]
    supervisors = cluster.api("/api/v1/supervisor/summary")["supervisors"]
    assert sorted(s["host"] for s in supervisors) == ["supervisor1", "supervisor2"]
    ui_log = cluster.compose("logs", "--no-color", "ui").stdout
    assert "serving on 0.0.0.0:8080" in ui_log, ui_log[-2000:]


def test_word_count_from_the_host_has_every_tuple_acked(cluster: ComposeCluster,
                                                         bundle: Path) -> None:
    cluster.stormpy("jar", str(bundle), "wordcount:topology", "--nimbus", leading(cluster))
    row = wait_acked(cluster, "wordcount", "sentences", 10_000, 600)
    assert int(row["acked"]) == 10_000 and int(row["failed"]) == 0
    # the 10-minute window of a young topology counts the same tuples as "All time"
    recent = wait_acked(cluster, "wordcount", "sentences", 10_000, 120, window="600")
    assert int(recent["acked"]) == 10_000
    cluster.stormpy("kill", "wordcount", "-w", "0", "--nimbus", leading(cluster))


def test_a_killed_supervisor_container_moves_its_workers_and_loses_nothing(
        cluster: ComposeCluster, bundle: Path) -> None:
    ledger_dir = cluster.shared / "ledger"
    ledger_dir.mkdir()
    # half the ids now, the other half once the supervisor is killed: the spout reads new ids
    # from the ledger as it runs, so the run goes on past the kill however slow the host is
    ledger.add_ids(ledger_dir, range(LEDGER_IDS // 2))
    for path in [ledger_dir, *ledger_dir.iterdir()]:
        path.chmod(0o777 if path.is_dir() else 0o666)
    env_ledger = {"LEDGER_DIR": str(ledger_dir), "LEDGER_RATE": "20"}
    os.environ.update(env_ledger)
    cluster.env.update(env_ledger)
    cluster.stormpy("jar", str(bundle), "ledger:topology", "--nimbus", leading(cluster))
    wait_for(lambda: ledger.acked_count(ledger_dir) >= 50, 600, "the ledger topology running",
             interval=1)

    def hosts() -> list[str]:
        tops = [t for t in cluster.api("/api/v1/topology/summary")["topologies"]
                if t["name"] == "ledger"]
        doc = cluster.api(f"/api/v1/topology-workers/{tops[0]['id']}")
        return sorted(w["host"] for w in doc["hostPortList"])

    before = hosts()
    assert len(before) == 2
    victim = before[0]
    killed = cluster.container(victim)
    cluster.compose("kill", victim)
    ledger.add_ids(ledger_dir, range(LEDGER_IDS // 2, LEDGER_IDS))
    wait_for(lambda: victim not in (h := hosts()) and len(h) == 2, 300,
             f"the workers of {victim} moved", interval=2, ignore=(OSError, IndexError))
    wait_for(lambda: ledger.acked_count(ledger_dir) == LEDGER_IDS, 600, "every ledger id acked",
             interval=1)
    result = ledger.audit(ledger_dir)
    assert result.lost == [] and result.doubled == [], result.summary()
    cluster.stormpy("kill", "ledger", "-w", "0", "--nimbus", leading(cluster))
    cluster.compose("start", victim)
    assert cluster.container(victim) == killed
    wait_for(lambda: cluster.health()[victim] == "healthy", 300, f"{victim} healthy again",
             interval=2)


def test_the_other_nimbus_leads_when_the_leader_stops(cluster: ComposeCluster,
                                                       bundle: Path) -> None:
    first = wait_for(lambda: leader(cluster), 120, "a leading Nimbus", interval=1, ignore=(OSError,))
    other = "nimbus2" if first == "nimbus" else "nimbus"
    cluster.compose("stop", "-t", "20", first)
    wait_for(lambda: leader(cluster) == other, 120, f"{other} leading", interval=1,
             ignore=(OSError,))
    cluster.stormpy("jar", str(bundle), "wordcount:topology", "--name", "after-failover",
                    "--nimbus", cluster.nimbus(other))
    wait_acked(cluster, "after-failover", "sentences", 10_000, 600)
    cluster.stormpy("kill", "after-failover", "-w", "0", "--nimbus", cluster.nimbus(other))


def test_the_flagship_runs_on_the_compose_spark_cluster(cluster: ComposeCluster,
                                                         bundle: Path) -> None:
    # generous: on a loaded 2-core host a Spark daemon's JVM has taken minutes to start (it has
    # had the earlier scenarios' time already)
    cluster.wait_healthy(SPARK_SERVICES, 1200)
    nimbus = leading(cluster)
    cluster.stormpy("jar", str(bundle), "compose_flagship:topology", "--name", "flagship",
                    "-c", "flagship.fail.batch=-1", "--nimbus", nimbus)
    wait_acked(cluster, "flagship", "logs", FLAGSHIP_LINES, 900)
    # killing it stops the reporter, which reads the Parquet back with Spark and writes the summary
    cluster.stormpy("kill", "flagship", "-w", "0", "--nimbus", nimbus)
    summary_path = cluster.shared / "flagship" / "summary.json"
    summary = wait_for(lambda: summary_path.exists() and json.loads(summary_path.read_text()),
                       300, "the flagship's summary.json", interval=1, ignore=(ValueError,))
    assert summary["lines"] == summary["acked"] == FLAGSHIP_LINES
    assert summary["traffic"]["requests"] + summary["malformed"] == FLAGSHIP_LINES  # accounting
    assert summary["batch_records"] == summary["traffic"]["requests"]


def test_down_leaves_no_container_network_or_volume(cluster: ComposeCluster) -> None:
    assert all(cluster.project_leftovers().values())  # the project is up before
    cluster.compose("down", "-v", "--remove-orphans", "-t", "10")
    assert cluster.project_leftovers() == {"containers": [], "networks": [], "volumes": []}
