"""Multilang on real processes: shell components run by cluster workers from the topology's
bundle (their working directory is the worker's code dir), with a pystorm bolt in-process; a
kill ends every subprocess with the workers."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import cluster_wc
import psutil
import pytest
from cluster_kit import (  # noqa: F401 - fixtures
    attach_cluster_logs,
    cluster_fixture,
    kill_and_check_gone,
    wait_for,
)

from stormpy.bundle import build_bundle
from stormpy.testing._cluster import ProcessCluster

HERE = Path(__file__).resolve().parents[1] / "multilang"


pytestmark = [pytest.mark.timeout(240), pytest.mark.zookeeper, pytest.mark.cluster]

SENTENCES = ["the cow jumped over the moon", "snow white and the seven dwarfs"]


def _final_counts(out_dir: Path) -> dict[str, int]:
    final: dict[str, int] = {}
    for path in out_dir.glob("counts-*.txt"):
        for line in path.read_text().splitlines():
            word, _, count = line.partition(" ")
            if count:
                final[word] = max(final.get(word, 0), int(count))
    return final


def _shell_subprocesses(base: Path) -> list[psutil.Process]:
    found = []
    for proc in psutil.process_iter(["cmdline", "cwd"]):
        cmd, cwd = proc.info["cmdline"] or [], proc.info["cwd"] or ""
        if cwd.startswith(str(base)) and any(a.endswith(("splitsentence.py", "sentence_spout.py"))
                                             for a in cmd):
            found.append(proc)
    return found


def test_shell_components_on_a_cluster(cluster: ProcessCluster, tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    bundle = build_bundle(HERE, tmp_path / "multilang.zip").path
    spec = cluster_wc.build(str(out), SENTENCES)
    tid = cluster.client().submit("multilang", bundle, spec.to_doc(),
                                  {"topology.workers": 1, "topology.message.timeout.secs": 10})
    expected = dict(Counter(w for s in SENTENCES for w in s.split()))
    wait_for(lambda: _final_counts(out) == expected, 120, "the word counts", cluster)
    assert len(_shell_subprocesses(cluster.base_dir)) == 3  # a spout task, two split tasks
    kill_and_check_gone(cluster, "multilang", tid)
    wait_for(lambda: not _shell_subprocesses(cluster.base_dir), 30,
             "the shell subprocesses ended with the workers", cluster)
