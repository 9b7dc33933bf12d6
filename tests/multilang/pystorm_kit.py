"""pystorm components recording what they see, for the in-process adapter's tests (a fixture).
They run in the test's process, so they write to ``SEEN`` (cleared by each test)."""

from collections import defaultdict

from pystorm import BatchingBolt, Bolt, Spout, TicklessBatchingBolt

SEEN: dict = defaultdict(list)


class RecordBolt(Bolt):
    """Records each tuple as pystorm gives it; emits its first value (auto-anchored)."""

    outputs = ["word"]

    def initialize(self, conf, ctx):
        SEEN["initialize"].append((self.component_name, self.task_id, ctx["componentid"]))

    def process(self, tup):
        SEEN["tuples"].append(tup)
        self.emit([tup.values[0]])


class UnanchoredBolt(Bolt):
    """``auto_anchor = False``: emits its first value unanchored, except the word "anchored",
    which it anchors explicitly."""

    outputs = ["word"]
    auto_anchor = False

    def process(self, tup):
        word = tup.values[0]
        self.emit([word], anchors=[tup] if word == "anchored" else None)


class TaskIdsBolt(Bolt):
    """Emits asking for task ids, then a direct emit to the first task of 'direct-sink'."""

    outputs = {"default": ["word"], "direct": {"fields": ["word"], "direct": True}}

    def process(self, tup):
        tasks = self.emit([tup.values[0]], need_task_ids=True)
        SEEN["tasks"].append(tasks)
        target = min(int(t) for t, c in self.context["task->component"].items()
                     if c == "direct-sink")
        SEEN["direct"].append((target, self.emit([tup.values[0]], stream="direct",
                                                 direct_task=target, need_task_ids=True)))


class ToolsBolt(Bolt):
    """log, report_metric, raise_exception; then acks by hand (auto_ack off)."""

    outputs = []
    auto_ack = False

    def process(self, tup):
        self.log("a warning from pystorm", level="warning")
        self.report_metric("seen", tup.values[0])
        self.raise_exception(ValueError("reported, not raised"), tup)
        self.ack(tup)


class CrashBolt(Bolt):
    """Raises on 'boom'; pystorm auto-fails the tuple and (by default) exits."""

    outputs = ["word"]

    def initialize(self, conf, ctx):
        SEEN["initialize"].append(type(self).__name__)

    def process(self, tup):
        if tup.values[0] == "boom":
            raise ValueError("boom")
        self.emit([tup.values[0]])


class CrashKeepRunningBolt(CrashBolt):
    exit_on_exception = False


class GroupCountBolt(BatchingBolt):
    outputs = ["word", "count"]
    ticks_between_batches = 1

    def group_key(self, tup):
        return tup.values[0]

    def process_batch(self, key, tups):
        SEEN["batches"].append((key, [t.values[0] for t in tups]))
        self.emit([key, len(tups)])


class TicklessGroupCountBolt(TicklessBatchingBolt):
    outputs = ["word", "count"]
    secs_between_batches = 2

    def group_key(self, tup):
        return tup.values[0]

    def process_batch(self, key, tups):
        self.emit([key, len(tups)])


class ListSpout(Spout):
    """Emits 'a', 'b', 'c' with ids; records acks, fails, activation."""

    outputs = ["word"]

    def initialize(self, conf, ctx):
        self.todo = ["a", "b", "c"]

    def next_tuple(self):
        if self.todo:
            word = self.todo.pop(0)
            self.emit([word], tup_id=word)

    def ack(self, tup_id):
        SEEN["acked"].append(tup_id)

    def fail(self, tup_id):
        SEEN["failed"].append(tup_id)

    def activate(self):
        SEEN["activate"].append(True)

    def deactivate(self):
        SEEN["deactivate"].append(True)


class AckThenEmitBolt(Bolt):
    """Emits, acks, then emits again anchored (automatically) to the tuple it just acked."""

    outputs = ["word"]
    auto_ack = False

    def process(self, tup):
        self.emit([tup.values[0]])
        self.ack(tup)
        self.emit([tup.values[0] + "-late"])


class ScriptBolt(Bolt):
    """Runs ``SEEN["do"](self, tup)`` for each tuple (the test's script), after recording it;
    keeps pystorm's own read_tuple, emit, ack and fail (the adapter's shortcuts)."""

    outputs = {"default": ["word"], "pair": ["a", "b"],
               "direct": {"fields": ["word"], "direct": True}}

    def initialize(self, conf, ctx):
        SEEN["initialize"].append(self)
        SEEN["initialize_args"].append((conf, ctx))

    def process(self, tup):
        SEEN["tuples"].append(tup)
        SEEN["do"][0](self, tup)


class GeneralScriptBolt(ScriptBolt):
    """ScriptBolt overriding read_tuple, emit, ack and fail (each recorded in ``SEEN["own"]``,
    then pystorm's), so the adapter runs pystorm's own code for them: command maps through
    ``send_message``."""

    def read_tuple(self):
        SEEN["own"].append("read_tuple")
        return super().read_tuple()

    def emit(self, tup, **kwargs):
        SEEN["own"].append("emit")
        return super().emit(tup, **kwargs)

    def ack(self, tup):
        SEEN["own"].append("ack")
        super().ack(tup)

    def fail(self, tup):
        SEEN["own"].append("fail")
        super().fail(tup)


class OwnAckScriptBolt(ScriptBolt):
    """ScriptBolt overriding only ack and fail (recorded in ``SEEN["own"]``, then pystorm's):
    its emits take the adapter's shortcut, its acks and fails pystorm's command maps."""

    def ack(self, tup):
        SEEN["own"].append("ack")
        super().ack(tup)

    def fail(self, tup):
        SEEN["own"].append("fail")
        super().fail(tup)


class ScriptBatchingBolt(BatchingBolt):
    """A batching bolt whose process_batch runs ``SEEN["do"](self, key, tups)``."""

    outputs = ["word"]
    ticks_between_batches = 1

    def group_key(self, tup):
        return tup.values[0]

    def process_batch(self, key, tups):
        SEEN["do"][0](self, key, tups)


class ScriptTicklessBolt(TicklessBatchingBolt):
    """A tickless batching bolt whose process_batch runs ``SEEN["do"](self, key, tups)``."""

    outputs = ["word", "count"]
    secs_between_batches = 3

    def initialize(self, conf, ctx):
        SEEN["initialize"].append(self)

    def group_key(self, tup):
        return tup.values[0]

    def process_batch(self, key, tups):
        SEEN["do"][0](self, key, tups)


class ScriptSpout(Spout):
    """Runs ``SEEN["do"](self, command)`` for next_tuple (command "next"), ack, fail, activate
    and deactivate (the command's name and its id, if any)."""

    outputs = {"default": ["word"], "other": ["word"],
               "direct": {"fields": ["word"], "direct": True}}

    def initialize(self, conf, ctx):
        SEEN["initialize"].append(self)

    def next_tuple(self):
        SEEN["do"][0](self, "next", None)

    def ack(self, tup_id):
        SEEN["do"][0](self, "ack", tup_id)

    def fail(self, tup_id):
        SEEN["do"][0](self, "fail", tup_id)

    def activate(self):
        SEEN["do"][0](self, "activate", None)

    def deactivate(self):
        SEEN["do"][0](self, "deactivate", None)
