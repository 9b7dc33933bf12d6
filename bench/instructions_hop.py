"""Instructions per tuple that crosses workers (callgrind): the hop, sender plus receiver.

``python -m bench.instructions --hop [--acking] [--workload final|running]`` runs the bench word
count (one spout, one split, one count task; ``running``: one sink too) twice in one process:

- ``one worker``: every task in one ``Worker`` (what ``python -m bench.instructions`` counts);
- ``two workers``: the same tasks in two ``Worker``s exchanging real msgpack frames through an
  ``InprocHub`` (``messaging/inproc.py``: the frames LocalCluster's workers and ZeroMQ carry,
  handed over in a deque instead of a socket), the spout, split (and acker) in worker A, the count
  task (and the sink) in worker B, so EVERY word crosses once (``running``: the sink sits with
  the count, so still once),
  and with acking on the count's acks cross back to the acker in A once per loop round.

Both loops are driven on the main thread (A's round, then B's), seeded as in
``bench/instructions.py``. Each is counted at ``--small`` and ``--large`` sentences and the
difference taken; (two workers − one worker) / words is what the hop costs per crossing tuple,
sender plus receiver. ``--breakdown`` (compiled path only: interpreted functions have no name
under callgrind) profiles one two-worker run of ``--large`` sentences and prints per crossing
word the inclusive instructions of the hop's parts: the sender's appends to the peer's outbox,
the packing (msgpack), the transport's send and receive, the unpacking, the inbound checks with
the ``Tuple`` construction and queueing, the receiver's dispatch of its queue, and the acker
messages.
"""

from __future__ import annotations

import argparse
import os
import random
import re
import subprocess
import sys
import tempfile

from bench.runners import TOPOLOGIES  # noqa: F401 - puts bench/topologies on sys.path


def run_two(n: int, workload: str, acking: bool) -> int:
    """One run over ``n`` sentences on two in-process workers; returns the words."""
    from bench_wordcount import build
    from bench_workload import sentences

    from stormpy.messaging.inproc import InprocHub
    from stormpy.topology._layout import compute_layout
    from stormpy.worker.factory import WorkerConfig
    from stormpy.worker.loop import Worker

    random.seed(n)
    lines = sentences(n)
    words = sum(len(s.split()) for s in lines)
    conf = {"topology.acker.executors": 1 if acking else 0,
            "topology.max.spout.pending": 5000 if acking else None,
            "topology.message.timeout.secs": 3600, "topology.workers": 2}
    spec = build(n, acking, workload=workload)
    from stormpy.config import merged
    full = merged(conf)
    layout = compute_layout(spec, full)
    receiving = {"count", "sink"}
    owner = {t: ("b" if c in receiving else "a") for t, c in layout.task_component.items()}
    hub = InprocHub(high_water_mark=1 << 30)
    workers = []
    for key in ("a", "b"):
        config = WorkerConfig("hop", spec, conf, layout=layout,
                              local_tasks=[t for t, k in owner.items() if k == key],
                              task_peers={t: k for t, k in owner.items() if k != key})
        workers.append(Worker(config, transport=hub.transport(key)))
    a, b = workers
    a.tune_gc()
    a.open()
    b.open()
    last = "sink" if workload == "running" else "count"
    instance = next(r.instance for r in b.tasks.values() if r.component_id == last)
    spout = next(r.instance for r in a.tasks.values() if r.component_id == "sentences")
    while instance.n < words or (acking and spout.acked < n):
        a.run_once()
        b.run_once()
    rejected = a.rejected_total if hasattr(a, "rejected_total") else sum(a.rejected.values())
    rejected += sum(b.rejected.values())
    if rejected:
        raise RuntimeError(f"{rejected} inbound tuples rejected: {a.rejected} {b.rejected}")
    return words


def _callgrind(args: list[str], out_file: str = "/dev/null") -> tuple[int, int]:
    cmd = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out_file}", sys.executable,
           "-m", "bench.instructions", *args]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True,
                         env={**os.environ, "PYTHONHASHSEED": "0"})
    m = re.search(r"Collected : (\d+)", out.stderr)
    words = re.search(r"words (\d+)", out.stdout)
    if not m or not words:
        raise RuntimeError(f"no instruction count in: {out.stderr[-2000:]}{out.stdout[-500:]}")
    return int(m.group(1)), int(words.group(1))


def per_word(small: int, large: int, extra: list[str]) -> float:
    (i1, w1), (i2, w2) = (_callgrind(["--run", str(small), *extra]),
                          _callgrind(["--run", str(large), *extra]))
    return (i2 - i1) / (w2 - w1)


#: the hop's parts: name → patterns of the compiled (``CPyDef_``) or C functions whose inclusive
#: counts make it up (the transports' ``send``/``receive`` are interpreted: one call per frame)
PARTS: dict[str, list[str]] = {
    "sender: appending to the peer's outbox": [
        r"^CPyDef_transfer___deliver__deliverer_Transfer_obj_____call__$",   # before runs
        r"^CPyDef_transfer___deliver_many__many_deliverer_Transfer_obj_____call__$",
        r"^CPyDef_transfer___TaskWriter___put$", r"^CPyDef_transfer___TaskWriter___put_many$"],
    "sender: packing the frames (msgpack)": [r"^__pyx_pw_7msgpack_9_cmsgpack_6Packer_\d+pack$"],
    "receiver: unpacking the frames (msgpack)": [r"^__pyx_pw_7msgpack_9_cmsgpack_\d+unpackb$"],
    "receiver: Inbound.take (checks, Tuple, queueing; unpacking included)": [
        r"^CPyDef_inbound___Inbound___take$"],
    "  of it, Tuple.__init__ (every Tuple of the run, the sender's too)": [
        r"^CPyDef_tuple___Tuple_____init__$"],
    "receiver: queue pops (deque.popleft, every queue)": [r"^deque_popleft$"],
    "acker messages (Dispatch.flush_acks, both workers)": [
        r"^CPyDef_dispatch___Dispatch___flush_acks$"],
}


def breakdown(args: argparse.Namespace) -> None:
    import stormpy._native as native

    if not native.COMPILED:
        raise SystemExit(f"--breakdown needs the compiled tuple path ({native.PURE_REASON})")
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "callgrind.out")
        extra = ["--hop", "--workload", args.workload] + ["--acking"] * args.acking
        _, words = _callgrind(["--run", str(args.large), *extra], out)
        text = subprocess.run(["callgrind_annotate", "--inclusive=yes", "--threshold=100", out],
                              capture_output=True, text=True, check=True).stdout
    counts: list[tuple[int, str]] = []
    for line in text.splitlines():
        m = re.match(r"\s*([\d,]+)\s+(?:\([^)]*\)\s+)?(\S+)", line)
        if m:
            counts.append((int(m.group(1).replace(",", "")), m.group(2).split(":")[-1]))
    print(f"two workers, {args.workload}, acking {'on' if args.acking else 'off'}, compiled: "
          f"inclusive instructions per crossing word (one run of {args.large} sentences, "
          f"{words} words)")
    for part, patterns in PARTS.items():
        total = 0
        names = []
        for pattern in patterns:
            for count, name in counts:
                if re.search(pattern, name):
                    total += count
                    names.append(name)
                    break  # the first (largest) line of a symbol: its inclusive count
        print(f"  {part}: {total / words:,.0f}  [{', '.join(sorted(set(names))) or 'none'}]")
    if args.symbols:
        for count, name in counts[:args.symbols]:
            print(f"    {count / words:10,.0f}  {name}")
