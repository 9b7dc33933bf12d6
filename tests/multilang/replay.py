"""Plays a recorded multilang exchange against the host, as the subprocess (a test fixture).

    python replay.py EXCHANGE.json      (env REPLAY_DIR: where verdicts and the run counter go)

The exchange is ``{"runs": [[step, ...], ...]}``: the n-th start of the subprocess plays run n
(the last run again for later starts). The handshake comes first in every run and is checked
here: ``conf`` and ``context`` maps (``taskid``, ``componentid``, ``task->component``) and a
``pidDir`` in which the pid file is written before ``{"pid": n}`` is sent. Steps:

* ``{"expect": pattern}`` — the next message must match: maps match key by key, ``"*"`` anything,
  ``"<int>"`` an integer, ``"<int-list>"`` a list of integers (task ids), ``"$name"`` binds the
  value (or must equal it once bound); as in storm.py, messages read while task ids are
  expected (and task ids read while a message is) wait for their own step; the handshake
  binds ``"$task-of:<component>"`` to each component's first task id. Heartbeat tuples and
  spout ``next``/``activate``/``deactivate`` commands a step does not expect are answered with
  ``sync`` and skipped, unless the step says ``"strict": true`` (then they do not match).
* ``{"expect_any_order": [pattern, ...]}`` — those messages in any order (with ``"sync_each":
  true``, each answered by ``sync``, as spout commands are).
* ``{"send": message}`` — ``"$name"`` strings are replaced by their bound values.
* ``{"raw": text}`` — these bytes as they are (garbage).
* ``{"exit": code}``, ``{"hang": true}`` (stop reading and writing, never exit).
* ``{"echo": true}`` — from then on: emit every tuple's values anchored to it, then ack it; sync
  heartbeats and spout commands.

The verdict (``ok`` or what did not match) goes to ``REPLAY_DIR/verdict-<run>``; a mismatch also
ends the process with exit code 3. After the last step the player answers heartbeats and spout
commands with ``sync`` until its input closes.
"""

import json
import os
import sys
import time
from collections import deque

SERIALIZER = os.environ.get("STORMPY_MULTILANG_SERIALIZER", "json")
OUT = sys.stdout.buffer
IN = sys.stdin.buffer

if SERIALIZER == "msgpack":
    import msgpack

    _unpacker = msgpack.Unpacker(raw=False)

    def read():
        while True:
            for msg in _unpacker:
                return msg
            data = os.read(IN.fileno(), 65536)
            if not data:
                raise EOFError
            _unpacker.feed(data)

    def write(msg):
        OUT.write(msgpack.packb(msg, use_bin_type=True))
        OUT.flush()
else:
    def read():
        lines = []
        while True:
            line = IN.readline()
            if not line:
                raise EOFError
            if line.rstrip(b"\n") == b"end":
                return json.loads(b"".join(lines))
            lines.append(line)

    def write(msg):
        OUT.write(json.dumps(msg).encode() + b"\nend\n")
        OUT.flush()


class Mismatch(Exception):
    pass


def match(pattern, value, names, where="message"):
    if isinstance(pattern, str):
        if pattern == "*":
            return
        if pattern == "<int>":
            if isinstance(value, int) and not isinstance(value, bool):
                return
            raise Mismatch(f"{where}: expected an integer, got {value!r}")
        if pattern == "<int-list>":
            if isinstance(value, list) and all(isinstance(v, int) for v in value):
                return
            raise Mismatch(f"{where}: expected task ids, got {value!r}")
        if pattern.startswith("$"):
            if pattern in names:
                if names[pattern] != value:
                    raise Mismatch(f"{where}: expected {pattern}={names[pattern]!r}, got {value!r}")
            else:
                names[pattern] = value
            return
    if isinstance(pattern, dict):
        if not isinstance(value, dict):
            raise Mismatch(f"{where}: expected a map, got {value!r}")
        for key, sub in pattern.items():
            if key not in value:
                raise Mismatch(f"{where}: no {key!r} in {value!r}")
            match(sub, value[key], names, f"{where}.{key}")
        return
    if isinstance(pattern, list):
        if not isinstance(value, list) or len(value) != len(pattern):
            raise Mismatch(f"{where}: expected {pattern!r}, got {value!r}")
        for i, (p, v) in enumerate(zip(pattern, value)):
            match(p, v, names, f"{where}[{i}]")
        return
    if pattern != value:
        raise Mismatch(f"{where}: expected {pattern!r}, got {value!r}")


def substitute(msg, names):
    if isinstance(msg, str) and msg in names:
        return names[msg]
    if isinstance(msg, dict):
        return {k: substitute(v, names) for k, v in msg.items()}
    if isinstance(msg, list):
        return [substitute(v, names) for v in msg]
    return msg


def is_heartbeat(msg):
    return isinstance(msg, dict) and msg.get("stream") == "__heartbeat" and msg.get("task") == -1


def is_spout_command(msg):
    return isinstance(msg, dict) and msg.get("command") in (
        "next", "ack", "fail", "activate", "deactivate")


def incidental(msg, pattern):
    """A heartbeat or a spout ``next``/``activate``/``deactivate`` the step does not ask for:
    answered, skipped."""
    if is_heartbeat(msg):
        return not (isinstance(pattern, dict) and pattern.get("stream") == "__heartbeat")
    if isinstance(msg, dict) and msg.get("command") in ("next", "activate", "deactivate"):
        return not (isinstance(pattern, dict) and pattern.get("command") == msg["command"])
    return False


PENDING_MESSAGES = deque()  # read while waiting for task ids (as storm.py keeps them)
PENDING_TASK_IDS = deque()  # read while waiting for a message


def read_for(pattern, strict=False):
    want_ids = pattern == "<int-list>" or isinstance(pattern, list)
    while True:
        if want_ids and PENDING_TASK_IDS:
            return PENDING_TASK_IDS.popleft()
        msg = PENDING_MESSAGES.popleft() if not want_ids and PENDING_MESSAGES else read()
        if not strict and incidental(msg, pattern):
            write({"command": "sync"})
        elif isinstance(msg, list) and not want_ids:
            PENDING_TASK_IDS.append(msg)
        elif not isinstance(msg, list) and want_ids:
            PENDING_MESSAGES.append(msg)
        else:
            return msg


def echo():
    while True:
        msg = read()
        if is_heartbeat(msg) or is_spout_command(msg):
            write({"command": "sync"})
        elif isinstance(msg, dict) and "tuple" in msg:
            write({"command": "emit", "anchors": [msg["id"]], "tuple": msg["tuple"],
                   "need_task_ids": False})
            write({"command": "ack", "id": msg["id"]})


def handshake(names):
    msg = read()
    for key in ("conf", "context", "pidDir"):
        if key not in msg:
            raise Mismatch(f"handshake without {key!r}: {msg!r}")
    ctx = msg["context"]
    for key in ("taskid", "componentid", "task->component"):
        if key not in ctx:
            raise Mismatch(f"handshake context without {key!r}: {ctx!r}")
    if not os.path.isdir(msg["pidDir"]):
        raise Mismatch(f"pidDir {msg['pidDir']!r} is no directory")
    for task, component in sorted(ctx["task->component"].items(), key=lambda kv: -int(kv[0])):
        names[f"$task-of:{component}"] = int(task)  # the component's first task id
    _write_file(os.path.join(msg["pidDir"], str(os.getpid())), "")
    write({"pid": os.getpid()})


def _read_file(path):
    with open(path) as f:
        return f.read()


def _write_file(path, text):
    """Whole or not at all: readers never see a half-written file."""
    with open(path + ".tmp", "w") as f:
        f.write(text)
    os.replace(path + ".tmp", path)


def next_run(directory):
    counter = os.path.join(directory, "runs")
    n = int(_read_file(counter)) if os.path.exists(counter) else 0
    _write_file(counter, str(n + 1))
    return n


def play(steps, names):
    for step in steps:
        if "expect" in step:
            match(step["expect"], read_for(step["expect"], step.get("strict", False)), names)
        elif "expect_any_order" in step:
            left = list(step["expect_any_order"])
            while left:
                msg = read_for(left[0])
                for i, pattern in enumerate(left):
                    try:
                        match(pattern, msg, dict(names))
                    except Mismatch:
                        continue
                    match(pattern, msg, names)
                    del left[i]
                    if step.get("sync_each"):
                        write({"command": "sync"})
                    break
                else:
                    raise Mismatch(f"{msg!r} matches none of {left!r}")
        elif "send" in step:
            write(substitute(step["send"], names))
        elif "raw" in step:
            OUT.write(step["raw"].encode())
            OUT.flush()
        elif "exit" in step:
            os._exit(step["exit"])
        elif "hang" in step:
            while True:
                time.sleep(3600)
        elif "echo" in step:
            echo()
        else:
            raise Mismatch(f"unknown step {step!r}")


def main():
    directory = os.environ["REPLAY_DIR"]
    runs = json.loads(_read_file(sys.argv[1]))["runs"]
    n = next_run(directory)
    verdict = os.path.join(directory, f"verdict-{n}")
    names = {}
    try:
        handshake(names)
        play(runs[min(n, len(runs) - 1)], names)
    except Mismatch as exc:
        _write_file(verdict, f"mismatch: {exc}")
        sys.exit(3)
    except EOFError:
        _write_file(verdict, "input closed before the exchange ended")
        return
    _write_file(verdict, "ok")
    try:
        while True:
            msg = read()
            if is_heartbeat(msg) or is_spout_command(msg):
                write({"command": "sync"})
    except EOFError:
        pass


if __name__ == "__main__":
    main()
