"""The peers bench (``python -m bench.peers``, Apache Storm beside stormpy and Bytewax) and the
framework instruction counts: the same sentences and words reach every side; the harness runs
end to end on a tiny workload without Java (no timing is asserted). The Storm round itself runs
only where the Maven project was built (``make bench-peers``); ``make test`` never needs Maven."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import types
from pathlib import Path

import pytest
import yaml
from bench import instructions, runners
from bench.peers import storm_cluster, storm_peer

ROOT = Path(__file__).resolve().parents[3]
STORM = ROOT / "bench" / "peers" / "storm"
JAVA = STORM / "src" / "main" / "java" / "stormpy" / "bench" / "WordCountBench.java"
SPLITTER = STORM / "src" / "main" / "resources" / "resources" / "splitter.py"



def test_the_jvm_reads_the_python_generators_sentences_and_splits_them_into_the_same_words(
        tmp_path: Path) -> None:
    lines = runners.sentences(500)
    path = tmp_path / "sentences.txt"
    storm_peer.write_sentences(lines, path)
    # the JVM reads the file's lines (Files.readAllLines) and splits on single spaces
    assert tuple(path.read_text(encoding="utf-8").splitlines()) == lines
    assert all(s.split(" ") == s.split() for s in lines)
    source = JAVA.read_text()
    assert "Files.readAllLines(file, StandardCharsets.UTF_8)" in source
    assert source.count('.split(" ")') == 3  # the split bolt, the round's and the file's words


def test_write_sentences_refuses_a_sentence_the_java_side_would_split_differently(
        tmp_path: Path) -> None:
    for bad in ("two  spaces", " leading", "a\nbreak"):
        with pytest.raises(ValueError, match="single spaces"):
            storm_peer.write_sentences(["fine words", bad], tmp_path / "s.txt")


def test_the_multilang_splitter_emits_each_word_of_the_sentence_anchored_by_basic_bolt(
        monkeypatch: pytest.MonkeyPatch) -> None:
    emitted: list[list[str]] = []
    ran: list[object] = []
    storm = types.ModuleType("storm")

    class BasicBolt:  # storm.py's BasicBolt anchors every emit to the input and acks it
        def run(self) -> None:
            ran.append(self)

    storm.BasicBolt = BasicBolt  # type: ignore[attr-defined]
    storm.emit = lambda values: emitted.append(values)  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "storm", storm)
    namespace: dict[str, object] = {"__name__": "__main__"}
    exec(compile(SPLITTER.read_text(), str(SPLITTER), "exec"), namespace)
    [bolt] = ran
    sentence = runners.sentences(3)[2]
    bolt.process(types.SimpleNamespace(values=[sentence]))  # type: ignore[attr-defined]
    assert emitted == [[w] for w in sentence.split()]


def test_the_pom_builds_against_storm_2_and_ships_storms_own_storm_py() -> None:
    assert re.fullmatch(r"2\.\d+\.\d+", storm_peer.storm_version())
    pom = (STORM / "pom.xml").read_text()
    for artifact in ("storm-client", "storm-server", "multilang-python"):
        assert f"<artifactId>{artifact}</artifactId>" in pom
    assert "<includes>resources/storm.py</includes>" in pom
    assert "bench/peers/storm/target/" in (ROOT / ".gitignore").read_text()


def test_peers_bench_without_storm_prints_stormpy_and_bytewax_rows(tmp_path: Path) -> None:
    out = tmp_path / "peers.json"
    res = subprocess.run([sys.executable, "-m", "bench.peers", "--no-storm", "--sentences", "200",
                          "--repeat", "1", "--output", str(out)], cwd=ROOT, capture_output=True,
                         text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    assert "Storm rows left out (--no-storm)" in res.stdout
    doc = json.loads(out.read_text())
    runs = doc["throughput"]
    for w in ("final", "running"):
        assert {f"{w}: bytewax (1 worker)",
                f"{w}: stormpy local, per-tuple (README form), acking off",
                f"{w}: stormpy local, per-tuple (README form), acking on",
                f"{w}: stormpy local, columnar, acking off",
                f"{w}: stormpy local, columnar, acking on"} == set(
                    k for k in runs if k.startswith(f"{w}:"))
    stormpy_rows = [r for r in runs.values() if r["side"] == "stormpy"]
    assert all(r["rss_kb"] > 0 and r["hwm_kb"] >= r["rss_kb"] for r in stormpy_rows)
    assert all(r["words_per_sec"] > 0 and r["vs_bytewax"] > 0 for r in runs.values())
    assert doc["storm_note"] == "left out (--no-storm)"


def test_the_storm_clusters_settings_are_a_storm_yaml() -> None:
    settings = {"storm.zookeeper.servers": ["127.0.0.1"], "storm.zookeeper.port": 2181,
                "supervisor.slots.ports": [6700, 6701],
                "worker.childopts": storm_cluster.WORKER_CHILDOPTS,
                "storm.local.dir": "/tmp/a dir: with a colon"}
    assert yaml.safe_load(storm_cluster.storm_yaml(settings)) == settings


def test_storm_daemons_start_as_storms_own_launcher_starts_them(tmp_path: Path) -> None:
    home, conf, logs = tmp_path / "home", tmp_path / "conf", tmp_path / "logs"
    nimbus = storm_cluster.NimbusDaemon(6627, home=home, conf_dir=conf, logs_dir=logs)
    nimbus._java = "java"
    cmd = nimbus.command()
    assert cmd[-1] == "org.apache.storm.daemon.nimbus.Nimbus"
    assert cmd[cmd.index("-cp") + 1] == f"{home / 'lib' / '*'}:{conf}"
    for prop in (f"-Dstorm.home={home}", f"-Dstorm.log.dir={logs}", "-Dlogfile.name=nimbus.log",
                 f"-Dlog4j.configurationFile={home / 'log4j2' / 'cluster.xml'}"):
        assert prop in cmd
    # the supervisor puts STORM_CONF_DIR on each worker's classpath
    supervisor = storm_cluster.SupervisorDaemon(6628, home=home, conf_dir=conf, logs_dir=logs)
    assert supervisor.launch_env()["STORM_CONF_DIR"] == str(conf)
    assert supervisor.main == "org.apache.storm.daemon.supervisor.Supervisor"


def test_the_storm_homes_log_configuration_reads_what_the_supervisor_passes_a_worker() -> None:
    worker = (storm_cluster.HOME_SOURCES / "log4j2" / "worker.xml").read_text()
    for prop in ("workers.artifacts", "storm.id", "worker.port", "logfile.name"):
        assert "${sys:" + prop + "}" in worker
    assert '<Logger name="STDOUT"' in worker and '<Logger name="STDERR"' in worker  # LogWriter
    cluster = (storm_cluster.HOME_SOURCES / "log4j2" / "cluster.xml").read_text()
    assert "${sys:storm.log.dir}/${sys:logfile.name}" in cluster
    assert "<artifactId>storm-client</artifactId>" in (
        storm_cluster.HOME_SOURCES / "pom.xml").read_text()
    assert storm_cluster.HOME.is_relative_to(storm_peer.TARGET)  # git-ignored
    assert storm_cluster.RUN_DIR.is_relative_to(storm_peer.TARGET)


def test_instruction_runs_of_the_plain_loop_and_bytewax_count_every_word() -> None:
    words = sum(len(s.split()) for s in runners.sentences(150))
    for runner in ("plain", "bytewax"):
        for workload in ("final", "running"):
            assert instructions.run_peer(runner, 150, workload) == words
    with pytest.raises(ValueError, match="unknown runner"):
        instructions.run_peer("flink", 150, "final")


@pytest.mark.skipif(not storm_peer.built() or shutil.which("java") is None,
                    reason="the Storm peer is built by `make bench-peers` (Java and Maven)")
def test_a_storm_round_counts_every_word_with_java_and_python_split_bolts(tmp_path: Path) -> None:
    lines = runners.sentences(60)
    words = sum(len(s.split()) for s in lines)
    path = tmp_path / "sentences.txt"
    storm_peer.write_sentences(lines, path)
    with storm_peer.StormPeer(path) as peer:
        assert peer.ready["words"] == words
        java = peer.run("running", True, "java", 60)
        python = peer.run("final", True, "python", 20)
    assert java["words"] == words and java["seconds"] > 0 and java["jvm_rss_kb"] > 0
    assert python["words"] == sum(len(s.split()) for s in lines[:20])
    assert python["python_hwm_kb"] > 0
