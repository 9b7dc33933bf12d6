"""Contract: ``make fuzz`` — coverage-guided fuzzing (atheris / libFuzzer) of the targets in
``fuzz_targets.py``, one process at a time, each for a bounded time.

``run_fuzz.py [TARGET ...] [--seconds N]`` runs every target (or those named) for N seconds
(default 120) in a child ``run_fuzz.py --child TARGET``, with the kept corpus
``tests/fuzz/corpus/<target>/`` as seeds and a scratch directory for what it finds, under
``-rss_limit_mb`` (memory bounded) and ``-timeout`` (a hang is a finding). It prints, per
target: executions, coverage (libFuzzer's ``cov`` edges and ``ft`` features), corpus size and
the crash/timeout files written to ``tests/fuzz/findings/``. ``--keep N`` copies the N smallest
new inputs (each added coverage when found) into the kept corpus. A finding becomes a
regression test by copying its file into the corpus: ``test_fuzz_regressions.py`` replays every
corpus file through its target in the normal suite.
"""

from __future__ import annotations

import argparse
import logging
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
CORPUS = HERE / "corpus"
FINDINGS = HERE / "findings"
RSS_LIMIT_MB = 1024
INPUT_TIMEOUT_SECS = 10
MAX_LEN = 8192


def child(name: str, argv: list[str]) -> None:
    """The atheris process of one target: stormpy is instrumented for coverage."""
    import atheris
    logging.disable(logging.CRITICAL)  # the receivers log each refusal: not the fuzzer's output
    with atheris.instrument_imports(include=["stormpy"]):
        import fuzz_targets
        target = fuzz_targets.TARGETS[name]
        target(b"")  # imports what the target loads lazily (the UI) under instrumentation
    atheris.Setup([sys.argv[0], *argv], target)
    atheris.Fuzz()


def run_one(name: str, seconds: int, keep: int) -> dict[str, str]:
    """Fuzz one target; its stats."""
    seeds = CORPUS / name
    seeds.mkdir(parents=True, exist_ok=True)
    FINDINGS.mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=f"fuzz-{name}-") as scratch:
        # the new inputs, and the child's temporary files (libFuzzer ends it without Python's
        # exit handlers): both go with the scratch directory
        corpus_dir, tmp = Path(scratch) / "corpus", Path(scratch) / "tmp"
        corpus_dir.mkdir()
        tmp.mkdir()
        cmd = [sys.executable, str(Path(__file__)), "--child", name, str(corpus_dir), str(seeds),
               f"-max_total_time={seconds}", f"-rss_limit_mb={RSS_LIMIT_MB}",
               f"-timeout={INPUT_TIMEOUT_SECS}", f"-max_len={MAX_LEN}", "-print_final_stats=1",
               f"-artifact_prefix={FINDINGS}/{name}-"]
        # the targets' imports: this directory, the sources, the unit tests' fakes, the examples
        env = {**os.environ, "TMPDIR": str(tmp), "PYTHONPATH": os.pathsep.join(
            [str(HERE), str(HERE.parents[1] / "src"), str(HERE.parent / "unit"),
             str(HERE.parents[1] / "examples"), os.environ.get("PYTHONPATH", "")])}
        log_path = FINDINGS / f"{name}.log"
        # to a file, not through this process's memory: a child starts with its parent's peak RSS,
        # which is what libFuzzer's memory limit reads
        with open(log_path, "wb") as out:
            proc = subprocess.run(cmd, stdout=out, stderr=subprocess.STDOUT, env=env, check=False)
        stats = _stats(log_path.read_text(errors="replace"))
        stats["exit"] = str(proc.returncode)
        if keep and proc.returncode == 0:  # each new input added coverage when it was found
            for path in sorted(corpus_dir.iterdir(), key=lambda p: p.stat().st_size)[:keep]:
                (seeds / path.name).write_bytes(path.read_bytes())
    stats["findings"] = " ".join(p.name for p in sorted(FINDINGS.glob(f"{name}-*"))) or "none"
    return stats


def _stats(log: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for key in ("number_of_executed_units", "average_exec_per_sec", "new_units_added",
                "peak_rss_mb"):
        m = re.search(rf"stat::{key}:\s*(\d+)", log)
        out[key] = m.group(1) if m else "?"
    last = [line for line in log.splitlines() if re.match(r"#\d+\s", line) and "cov:" in line]
    m = re.search(r"cov: (\d+) ft: (\d+) corp: (\d+)", last[-1]) if last else None
    out["cov"], out["ft"], out["corpus"] = (m.groups() if m else ("?", "?", "?"))
    return out


def main() -> None:
    if len(sys.argv) > 2 and sys.argv[1] == "--child":
        child(sys.argv[2], sys.argv[3:])
        return
    import fuzz_targets  # next to this script, first on the import path
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("targets", nargs="*", help=f"of: {', '.join(fuzz_targets.TARGETS)}")
    parser.add_argument("--seconds", type=int, default=int(os.environ.get("FUZZ_SECONDS", 120)))
    parser.add_argument("--keep", type=int, default=0,
                        help="copy the N smallest new inputs into tests/fuzz/corpus")
    args = parser.parse_args()
    unknown = [t for t in args.targets if t not in fuzz_targets.TARGETS]
    if unknown:
        parser.error(f"unknown target(s) {', '.join(unknown)}; known: {', '.join(fuzz_targets.TARGETS)}")
    failed = False
    for name in args.targets or list(fuzz_targets.TARGETS):
        stats = run_one(name, args.seconds, args.keep)
        failed |= stats["exit"] != "0"
        print(f"{name}: {stats['number_of_executed_units']} executions "
              f"({stats['average_exec_per_sec']}/s), cov {stats['cov']} ft {stats['ft']}, "
              f"corpus {stats['corpus']}, peak RSS {stats['peak_rss_mb']} MB, exit {stats['exit']}, "
              f"findings: {stats['findings']}", flush=True)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
