"""A reliable spout over a log file: each line is emitted with its byte offset as message id, and
a failed line is re-read from that offset and emitted again until it is acked."""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping
from typing import Any

from accesslogs.generator import ensure_log
from stormpy.topology import Spout, Stream, TopologyContext

PROGRESS_STREAM = "progress"


class LogFileSpout(Spout):
    """Emits the lines of ``path`` on the default stream (field ``line``), reliably.

    When ``generate_lines`` is set and the file is missing, the seeded generator writes it first.
    Once every line has been read and acked it emits one ``progress`` tuple (lines, acked, failed)
    so a reporter knows the totals; it emits another if later failures make it finish again.
    Single task (one file, one reader).
    """

    outputs = [Stream(["line"]), Stream(["lines", "acked", "failed"], name=PROGRESS_STREAM)]

    def __init__(self, path: str, generate_lines: int = 0, seed: int = 7) -> None:
        self.path = path
        self.generate_lines = generate_lines
        self.seed = seed

    def open(self, conf: Mapping[str, Any], context: TopologyContext) -> None:
        if len(context.component_tasks) != 1:
            raise ValueError("LogFileSpout reads one file: give it a single task")
        if self.generate_lines:
            ensure_log(self.path, self.generate_lines, self.seed)
        self.reader = open(self.path, "rb")  # noqa: SIM115 - closed in close()
        self.rereader = open(self.path, "rb")  # noqa: SIM115 - replays seek here
        self.offset = 0
        self.eof = False
        self.lines = 0
        self.pending: set[int] = set()
        self.replay: deque[int] = deque()
        self.acked = 0
        self.failed = 0
        self.reported = False

    def next_tuple(self) -> None:
        if self.replay:
            offset = self.replay.popleft()
            self.rereader.seek(offset)
            self._emit_line(self.rereader.readline(), offset)
            return
        if not self.eof:
            raw = self.reader.readline()
            if raw:
                offset = self.offset
                self.offset += len(raw)
                self.lines += 1
                self._emit_line(raw, offset)
                return
            self.eof = True
        if not self.pending and not self.reported:
            self.reported = True
            self.emit([self.lines, self.acked, self.failed], stream=PROGRESS_STREAM)

    def _emit_line(self, raw: bytes, offset: int) -> None:
        self.pending.add(offset)
        self.emit([raw.decode("utf-8", "replace").rstrip("\r\n")], msg_id=offset)

    def ack(self, msg_id: Any) -> None:
        self.pending.discard(msg_id)
        self.acked += 1

    def fail(self, msg_id: Any) -> None:
        self.failed += 1
        self.replay.append(msg_id)
        self.reported = False

    def close(self) -> None:
        self.reader.close()
        self.rereader.close()
