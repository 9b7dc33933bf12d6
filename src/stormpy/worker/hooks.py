"""Task hooks on the worker side: the hooked collector methods of a task that has hooks.

A task with no hook is never touched, so the tuple path pays nothing for the feature. For a task
with hooks (``context.hooks`` non-empty once the component is opened) ``install`` wraps, on that
task only, the collector methods bound onto the component (``emit``, ``emit_direct``, a spout's
``emit_batch``, ``ack``, ``fail`` and a spout's own ``ack_many``/``fail_many``) and the runner's
``execute`` (a bolt's input, a spout's acker replies), and calls the
hooks after each event (see ``stormpy.topology._hooks`` for the contract). The emit hook sees the
component's own emits only: acks reach the ackers folded per worker and round, not as a message
per ack, so unlike Storm no acking message is reported as an emit (docs/storm-semantics.md §5).
``auto_hooks`` builds
the hooks ``topology.auto.task.hooks`` names. This module is not compiled: it is off the hot path
of every topology without hooks.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from time import perf_counter
from typing import Any

from stormpy.acker.streams import ACK_ACK, ACK_FAIL
from stormpy.topology._component import BasicBolt
from stormpy.topology._hooks import (
    AUTO_TASK_HOOKS,
    BoltAckInfo,
    BoltExecuteInfo,
    BoltFailInfo,
    EmitInfo,
    SpoutAckInfo,
    SpoutFailInfo,
)
from stormpy.topology._imports import import_object
from stormpy.topology._tuple import DEFAULT_STREAM, Tuple
from stormpy.worker.spout_task import SpoutBatch, SpoutTask
from stormpy.worker.tasks import TaskRunner

log = logging.getLogger("stormpy.worker")

__all__ = ["auto_hooks", "cleanup", "install"]


def auto_hooks(conf: Mapping[str, Any]) -> list[Any]:
    """One new instance of every class ``topology.auto.task.hooks`` names (a list of import
    paths). ValueError naming the key or the path that is wrong."""
    paths = conf.get(AUTO_TASK_HOOKS) or []
    if isinstance(paths, str) or not isinstance(paths, list | tuple):
        raise ValueError(f"{AUTO_TASK_HOOKS} must be a list of TaskHook class paths, got {paths!r}")
    hooks = []
    for path in paths:
        try:
            hooks.append(import_object(str(path))())
        except Exception as exc:
            raise ValueError(f"{AUTO_TASK_HOOKS}: cannot build task hook {path!r}: {exc}") from exc
    return hooks


def _ms(start: float) -> float:
    return (perf_counter() - start) * 1000.0


def install(runner: TaskRunner) -> None:
    """Wrap ``runner``'s collector methods so its ``context.hooks`` see every event."""
    hooks = runner.context.hooks
    instance = runner.instance
    task = runner.task_id
    spout = isinstance(runner, SpoutTask)
    emit, emit_direct = instance.emit, instance.emit_direct

    def on_emit(values: Any, stream: Any, targets: list[int]) -> None:
        info = EmitInfo(list(values), stream, task, list(targets))
        for h in hooks:
            h.emit(info)

    if spout:
        def spout_emit(values: Any, msg_id: Any = None, stream: Any = DEFAULT_STREAM) -> list[int]:
            targets: list[int] = emit(values, msg_id, stream)
            on_emit(values, stream, targets)
            return targets

        def spout_emit_direct(target: Any, values: Any, msg_id: Any = None,
                              stream: Any = DEFAULT_STREAM) -> None:
            emit_direct(target, values, msg_id, stream)
            on_emit(values, stream, [target])

        emit_batch = instance.emit_batch

        def spout_emit_batch(values_list: Any, msg_ids: Any = None,
                             stream: Any = DEFAULT_STREAM) -> list[list[int]]:
            values_list = values_list if type(values_list) is list else list(values_list)
            targets_list: list[list[int]] = emit_batch(values_list, msg_ids, stream)
            for values, targets in zip(values_list, targets_list):  # one event per record
                on_emit(values, stream, targets)
            return targets_list
        instance.emit, instance.emit_direct = spout_emit, spout_emit_direct
        instance.emit_batch = spout_emit_batch
        _install_spout(runner, hooks)
    else:
        def bolt_emit(values: Any, anchors: Any = None, stream: Any = DEFAULT_STREAM) -> list[int]:
            targets: list[int] = emit(values, anchors, stream)
            on_emit(values, stream, targets)
            return targets

        def bolt_emit_direct(target: Any, values: Any, anchors: Any = None,
                             stream: Any = DEFAULT_STREAM) -> None:
            emit_direct(target, values, anchors, stream)
            on_emit(values, stream, [target])
        instance.emit, instance.emit_direct = bolt_emit, bolt_emit_direct
        _install_bolt(runner, hooks)


def _install_spout(runner: TaskRunner, hooks: list[Any]) -> None:
    """Acker replies carry the emit time (complete latency); acks without ackers and timeouts
    reach the spout's ``ack``/``fail`` directly (latency unknown)."""
    assert isinstance(runner, SpoutTask)
    instance = runner.instance
    task = runner.task_id
    replying = [False]
    pending = runner.pending
    on_reply = runner.execute
    user_ack, user_fail = instance.ack, instance.fail

    def execute(tup: Tuple) -> None:
        stream = tup.stream
        if stream != ACK_ACK and stream != ACK_FAIL:
            on_reply(tup)
            return
        entry = pending.get(tup.values[0])
        replying[0] = True
        try:
            on_reply(tup)
        finally:
            replying[0] = False
        if entry is None:
            return  # timed out already (or a duplicate reply): the spout heard nothing
        msg_id, start = entry
        ms = _ms(start)
        # a batch root: one event per message id, each with the batch's latency
        ids = msg_id.msg_ids if type(msg_id) is SpoutBatch else [msg_id]
        for mid in ids:
            if stream == ACK_ACK:
                ack_info = SpoutAckInfo(mid, task, ms)
                for h in hooks:
                    h.spout_ack(ack_info)
            else:
                fail_info = SpoutFailInfo(mid, task, ms)
                for h in hooks:
                    h.spout_fail(fail_info)

    def ack(msg_id: Any) -> None:
        user_ack(msg_id)
        if not replying[0]:
            info = SpoutAckInfo(msg_id, task, None)
            for h in hooks:
                h.spout_ack(info)

    def fail(msg_id: Any) -> None:
        user_fail(msg_id)
        if not replying[0]:
            info = SpoutFailInfo(msg_id, task, None)
            for h in hooks:
                h.spout_fail(info)
    runner.execute = execute
    instance.ack, instance.fail = ack, fail
    user_ack_many = getattr(instance, "ack_many", None)
    user_fail_many = getattr(instance, "fail_many", None)
    if user_ack_many is not None:  # the spout's own: a batch root's ids at once
        def ack_many(msg_ids: list[Any]) -> None:
            user_ack_many(msg_ids)
            if not replying[0]:
                for mid in msg_ids:
                    info = SpoutAckInfo(mid, task, None)
                    for h in hooks:
                        h.spout_ack(info)
        instance.ack_many = ack_many
    if user_fail_many is not None:
        def fail_many(msg_ids: list[Any]) -> None:
            user_fail_many(msg_ids)
            if not replying[0]:
                for mid in msg_ids:
                    info = SpoutFailInfo(mid, task, None)
                    for h in hooks:
                        h.spout_fail(info)
        instance.fail_many = fail_many


def _install_bolt(runner: TaskRunner, hooks: list[Any]) -> None:
    """Execute times the input; acks and fails of the tuple being executed get its process
    latency. A BasicBolt's automatic ack or fail is seen through the task's counters."""
    instance = runner.instance
    task = runner.task_id
    stats = runner.stats
    basic = isinstance(instance, BasicBolt)
    run = runner.execute
    current: list[Any] = [None, 0.0]

    def on_ack(tup: Tuple, ms: float | None) -> None:
        info = BoltAckInfo(tup, task, ms)
        for h in hooks:
            h.bolt_ack(info)

    def on_fail(tup: Tuple, ms: float | None) -> None:
        info = BoltFailInfo(tup, task, ms)
        for h in hooks:
            h.bolt_fail(info)

    def execute(tup: Tuple) -> None:
        start = perf_counter()
        acked, failed = stats.acked, stats.failed
        current[0], current[1] = tup, start
        try:
            run(tup)
        finally:
            current[0] = None
        ms = _ms(start)
        if basic:  # process() returned: the runner acked or failed the input
            if stats.acked != acked:
                on_ack(tup, ms)
            elif stats.failed != failed:
                on_fail(tup, ms)
        info = BoltExecuteInfo(tup, task, ms)
        for h in hooks:
            h.bolt_execute(info)

    runner.execute = execute
    if basic:
        return
    user_ack, user_fail = instance.ack, instance.fail

    def ack(tup: Tuple) -> None:
        user_ack(tup)
        on_ack(tup, _ms(current[1]) if current[0] is tup else None)

    def fail(tup: Tuple) -> None:
        user_fail(tup)
        on_fail(tup, _ms(current[1]) if current[0] is tup else None)
    instance.ack, instance.fail = ack, fail


def cleanup(runner: TaskRunner) -> None:
    """Each hook's ``cleanup`` (at shutdown, before the component's); errors are reported as the
    task's, never raised."""
    for h in runner.context.hooks:
        try:
            h.cleanup()
        except Exception as exc:  # noqa: BLE001 - shutdown must go on
            runner.report_error(exc)
