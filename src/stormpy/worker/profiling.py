"""Stack dumps, sampled CPU profiles and heap summaries of the running worker process, as text.

Contract (each function returns the report's text; none touches the executor loop, so they work
while a component is busy in user code: they run on another thread and need only the GIL, which a
busy Python loop gives up every few milliseconds):

* :func:`stack_dump` (Storm's jstack): every thread's name, id and Python stack (innermost frame
  last, with file, line and function), then :mod:`faulthandler`'s view of the same threads.
* :func:`cpu_profile` samples every thread's stack every ``interval`` seconds for ``seconds`` and
  reports the functions seen on top of a stack (self samples) and anywhere on it (total samples),
  most frequent first, and the hottest whole stacks in "collapsed" form (``a;b;c count``, the
  input of flame-graph tools). The sampler's own thread is left out.
* :func:`heap_summary` reports :mod:`tracemalloc`'s top allocations by line when tracing is on
  (the worker starts it at launch when ``worker.profiler.tracemalloc.frames`` > 0, or the first
  heap request starts it with that many frames, at least 1); it always adds the live objects
  counted by type (:func:`gc.get_objects`), so a first request without tracing still says something.
"""

from __future__ import annotations

import collections
import faulthandler
import gc
import os
import sys
import tempfile
import threading
import time
import traceback
import tracemalloc
from types import FrameType

__all__ = ["cpu_profile", "heap_summary", "stack_dump"]


def _thread_names() -> dict[int, str]:
    return {t.ident: t.name for t in threading.enumerate() if t.ident is not None}


def stack_dump() -> str:
    names = _thread_names()
    lines = [f"stack dump of pid {os.getpid()} at {time.strftime('%Y-%m-%d %H:%M:%S')}", ""]
    for ident, frame in sorted(sys._current_frames().items()):
        lines.append(f'"{names.get(ident, "?")}" (thread id {ident}):')
        lines.extend(line.rstrip("\n") for line in traceback.format_stack(frame))
        lines.append("")
    lines.append("faulthandler:")
    with tempfile.TemporaryFile("w+") as out:
        faulthandler.dump_traceback(out, all_threads=True)
        out.seek(0)
        lines.append(out.read())
    return "\n".join(lines)


def _describe(frame: FrameType) -> str:
    code = frame.f_code
    return f"{code.co_name} ({os.path.basename(code.co_filename)}:{code.co_firstlineno})"


def cpu_profile(seconds: float, interval: float = 0.01, top: int = 40) -> str:
    me = threading.get_ident()
    names = _thread_names()
    self_counts: collections.Counter[str] = collections.Counter()
    total_counts: collections.Counter[str] = collections.Counter()
    stacks: collections.Counter[str] = collections.Counter()
    samples = 0
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        for ident, frame in sys._current_frames().items():
            if ident == me:
                continue
            chain: list[str] = []
            f: FrameType | None = frame
            while f is not None:
                chain.append(_describe(f))
                f = f.f_back
            self_counts[chain[0]] += 1
            total_counts.update(set(chain))
            stacks[f"{names.get(ident, ident)};" + ";".join(reversed(chain))] += 1
        samples += 1
        time.sleep(interval)
    lines = [f"CPU profile of pid {os.getpid()}: {samples} samples every {interval * 1000:.0f} ms "
             f"over {seconds:g} s (all threads but the sampler's)", "", "self samples  function"]
    lines += [f"{n:12d}  {name}" for name, n in self_counts.most_common(top)]
    lines += ["", "total samples  function"]
    lines += [f"{n:13d}  {name}" for name, n in total_counts.most_common(top)]
    lines += ["", "collapsed stacks (thread;outermost;...;innermost count):"]
    lines += [f"{stack} {n}" for stack, n in stacks.most_common(top)]
    return "\n".join(lines) + "\n"


def heap_summary(frames: int = 1, top: int = 30) -> str:
    lines = [f"heap summary of pid {os.getpid()} at {time.strftime('%Y-%m-%d %H:%M:%S')}", ""]
    if tracemalloc.is_tracing():
        snapshot = tracemalloc.take_snapshot()
        stats = snapshot.statistics("lineno")
        current, peak = tracemalloc.get_traced_memory()
        lines.append(f"tracemalloc: {current / 1e6:.1f} MB traced now, {peak / 1e6:.1f} MB at peak; "
                     f"top {top} allocation sites:")
        lines += [f"{s.size / 1024:12.1f} KiB {s.count:9d} blocks  {s.traceback}" for s in stats[:top]]
    else:
        tracemalloc.start(max(1, frames))
        lines.append("tracemalloc was off: it is tracing from now on; ask again for the top "
                     "allocation sites since this request (or start workers with "
                     "worker.profiler.tracemalloc.frames > 0 to trace from launch)")
    counts: collections.Counter[str] = collections.Counter(type(o).__qualname__ for o in gc.get_objects())
    lines += ["", f"live objects tracked by the garbage collector, top {top} types:"]
    lines += [f"{n:12d}  {name}" for name, n in counts.most_common(top)]
    return "\n".join(lines) + "\n"
