"""The multilang bench's shell split bolt on Apache Storm: one JVM running Storm's
``LocalCluster`` (``ShellSplitBench.java`` of ``bench/peers/storm/``) whose split bolt is a
``ShellBolt`` running the command the stormpy shell row runs, so the two rows time the same
subprocess doing the same work (see ``bench.multilang_bench``).

    with StormShellSplit(sentences_file, command, env) as storm:
        storm.run(5000)   # {"sentences", "words", "counted", "seconds", "cpu_seconds"}

The JVM answers one ``run SENTENCES`` command per round with one JSON line, so its rounds
interleave with the Python rows in one bench run. Needs ``java`` and ``mvn`` (``storm_peer.build``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from bench.peers import storm_peer

MAIN = "stormpy.bench.ShellSplitBench"


class StormShellSplit(storm_peer.JvmRounds):
    """One JVM over the sentences of ``sentences_file`` (one per line, single-space separated:
    ``storm_peer.write_sentences``); the split bolt runs ``command`` with ``env`` (the JVM's
    environment, which its ShellBolt's subprocess inherits). Builds the Maven project first
    when needed. Use as a context manager."""

    def __init__(self, sentences_file: Path, command: Sequence[str],
                 env: Mapping[str, str] | None = None) -> None:
        storm_peer.build()
        super().__init__(MAIN, [str(sentences_file), *command],
                         log_prefix="stormpy-storm-split-", env=env)

    def run(self, sentences: int) -> dict[str, Any]:
        """One round on the first ``sentences`` sentences: ``seconds`` and ``cpu_seconds`` (the
        JVM's and its subprocesses') from the sink's first word to the spout's last ack,
        ``words`` expected and ``counted`` by then."""
        return self.command(f"run {sentences}")
