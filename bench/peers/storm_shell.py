"""One multilang shell component under Apache Storm and under stormpy, and what each emitted.

The component is ``bench/peers/storm/src/main/resources/resources/multilang_probe.py``, written
against Storm's own ``storm.py`` (``org.apache.storm:multilang-python``, unpacked by the Maven
build beside it in ``target/classes/resources/``). :func:`run_on_storm` runs it as a
``ShellBolt`` in Storm's ``LocalCluster`` (``ShellComponentRun.java``: a reliable spout of the
sentences → the component → a recording sink); :func:`run_on_stormpy` runs the same file, from
the same directory, as a stormpy ``ShellBolt`` in the same topology. Both return the emitted
tuples as ``(stream, values)`` pairs, values as JSON gives them back, in arrival order.

    python -m bench.peers.storm_shell      # builds the Maven project, runs both, compares

needs ``java`` and ``mvn`` (``storm_peer.build``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.peers import storm_peer

MAIN = "stormpy.bench.ShellComponentRun"
#: the built project's resources: Storm's storm.py and the component
CODE_DIR = storm_peer.TARGET / "classes"
COMPONENT = "multilang_probe.py"
#: the component's declared streams (as ShellComponentRun.java declares them)
OUTPUTS: dict[str, Any] = {
    "default": ["word", "position"],
    "shape": ["sentence", "words", "quarter", "first", "nothing", "even", "targets"],
}
#: a fixed input: plain words, repeats, non-ASCII words, an odd and even word count, and two
#: sentences the component fails once ("retry")
SENTENCES = (
    "the cow jumped over the moon",
    "an apple a day keeps the doctor away",
    "four score and seven years ago",
    "please retry this one",
    "snow white and the seven dwarfs",
    "café naïve über straße",
    "i am at two with nature",
    "retry me too",
    "the the the",
    "one",
)

Emitted = tuple[str, Any]


def _pair(stream: str, values: Any) -> Emitted:
    """``(stream, values)`` with the values as one JSON text (hashable, types kept)."""
    return stream, json.dumps(values, ensure_ascii=False)


def run_on_storm(sentences: Sequence[str] = SENTENCES, python: str = sys.executable,
                 timeout: float = 600.0) -> list[Emitted]:
    """The tuples the component emits under Apache Storm (builds the Maven project first when
    needed). RuntimeError with the JVM's output when the run fails."""
    storm_peer.build()
    classpath = f"{storm_peer.JAR}{os.pathsep}{storm_peer.CLASSPATH.read_text().strip()}"
    with tempfile.TemporaryDirectory(prefix="stormpy-storm-shell-") as tmp:
        source = Path(tmp) / "sentences.txt"
        out = Path(tmp) / "emitted.jsonl"
        source.write_text("".join(f"{s}\n" for s in sentences), encoding="utf-8")
        res = subprocess.run(
            ["java", *storm_peer.JVM_OPTS, "-cp", classpath, MAIN, str(source), python, COMPONENT,
             str(out)], cwd=storm_peer.TARGET, capture_output=True, text=True, timeout=timeout)
        if res.returncode != 0 or not out.exists():
            raise RuntimeError(f"the Storm JVM exited {res.returncode}: {res.stdout[-2000:]}"
                               f"{res.stderr[-4000:]}")
        doc = json.loads(res.stdout.strip().splitlines()[-1])
        if doc.get("acked") != len(sentences):
            raise RuntimeError(f"the Storm run acked {doc.get('acked')} of {len(sentences)}")
        return [_pair(*json.loads(line)) for line in out.read_text(encoding="utf-8").splitlines()]


def run_on_stormpy(sentences: Sequence[str] = SENTENCES, python: str = sys.executable,
                   timeout: float = 120.0) -> list[Emitted]:
    """The tuples the same component file emits under stormpy (``LocalCluster``, the same
    topology: a reliable spout sending failed sentences again, the component, a recording sink).
    Needs the built project's ``target/classes/resources`` (:func:`storm_peer.build`)."""
    from stormpy import TopologyBuilder
    from stormpy.multilang import ShellBolt
    from stormpy.testing import Capture, FeederSpout, LocalCluster, wait_for

    feeder, sink = FeederSpout(["sentence"]), Capture()

    class Replay:
        def ack(self, msg_id: Any) -> None:
            pass

        def fail(self, msg_id: Any) -> None:
            feeder.feed([sentences[msg_id]], msg_id)

    feeder.set_ack_fail_delegate(Replay())
    b = TopologyBuilder()
    b.set_spout("sentences", feeder)
    b.set_bolt("probe", ShellBolt(python, COMPONENT, cwd="resources").declare(OUTPUTS)) \
        .shuffle_grouping("sentences")
    b.set_bolt("sink", sink).shuffle_grouping("probe").shuffle_grouping("probe", "shape")
    with LocalCluster() as cluster:
        cluster.submit_topology("shell-component", {"worker.code.dir": str(CODE_DIR)},
                                b.create_topology())
        for i, sentence in enumerate(sentences):
            feeder.feed([sentence], i)
        wait_for(lambda: sorted(set(feeder.acked)) == list(range(len(sentences))), timeout,
                 "every sentence acked")
        errors = cluster.errors("shell-component")
        if errors:
            raise RuntimeError(f"the stormpy run reported errors: {errors}")
        return [_pair(t.stream, list(t.values)) for t in sink.tuples]


def main() -> int:
    storm = run_on_storm()
    ours = run_on_stormpy()
    same = Counter(storm) == Counter(ours)
    print(json.dumps({"storm_tuples": len(storm), "stormpy_tuples": len(ours), "same": same,
                      "only_storm": sorted((Counter(storm) - Counter(ours)).elements()),
                      "only_stormpy": sorted((Counter(ours) - Counter(storm)).elements())},
                     ensure_ascii=False, indent=1))
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
