"""Tracked topologies and ack-tracking spout wrappers (Storm's ``TrackedTopology``,
``Testing.trackedWait`` and ``AckTracker``).

Both wrap a spout in :class:`TrackingSpout`, which runs the real spout unchanged and tells a
sink (found in the test kit's registry) of every emit, ack and fail.
"""

from __future__ import annotations

import copy
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

from stormpy.host.waiting import WaitTimeout
from stormpy.local._cluster import LocalCluster
from stormpy.testing import _registry as registry
from stormpy.testing._acks import AckFailMapTracker
from stormpy.topology import Spout, Stream, TopologyContext
from stormpy.topology._errors import InvalidTopologyError
from stormpy.topology._imports import class_path, import_object
from stormpy.topology._spec import SPOUT, TopologySpec
from stormpy.topology._tuple import DEFAULT_STREAM
from stormpy.topology.clock import SimulatedClock

__all__ = ["AckTracker", "TrackedTopology", "TrackingSpout", "tracked_wait"]


class _Counts:
    """What a tracked topology's spouts did: untracked emits, acks and fails (thread-safe)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.untracked = 0
        self.acked = 0
        self.failed = 0

    def emitted(self, msg_id: Any) -> None:
        if msg_id is None:
            with self.lock:
                self.untracked += 1

    def ack(self, msg_id: Any) -> None:
        with self.lock:
            self.acked += 1

    def fail(self, msg_id: Any) -> None:
        with self.lock:
            self.failed += 1

    @property
    def completed(self) -> int:
        with self.lock:
            return self.untracked + self.acked + self.failed


class TrackingSpout(Spout):
    """Runs the spout ``inner`` (an import path, built with ``inner_kwargs``) and reports to the
    registry entry ``key``: ``emitted(msg_id)`` after every emit (each record of an
    ``emit_many``/``emit_batch``), ``ack``/``fail`` before the inner spout's. The inner spout's
    collector calls go through unchanged, and a batch's acks and fails reach the inner spout's
    ``ack_many``/``fail_many`` when it defines them (as without the wrapper)."""

    @classmethod
    def declare_outputs(cls, kwargs: Mapping[str, Any]) -> dict[str, Stream]:
        """The inner spout's streams."""
        inner: Any = import_object(kwargs["inner"])
        outputs: dict[str, Stream] = inner.declare_outputs(kwargs["inner_kwargs"])
        return outputs

    @classmethod
    def declare_config(cls, kwargs: Mapping[str, Any]) -> Mapping[str, Any]:
        """The inner spout's default config."""
        inner: Any = import_object(kwargs["inner"])
        config: Mapping[str, Any] = inner.declare_config(kwargs["inner_kwargs"])
        return config

    def __init__(self, inner: str, inner_kwargs: dict[str, Any], key: str) -> None:
        self.inner = import_object(inner)(**inner_kwargs)
        self.sink = registry.lookup(key)

    def open(self, conf: Mapping[str, Any], context: TopologyContext) -> None:
        inner = self.inner
        inner.emit = self._emit
        inner.emit_many = self._emit_many
        inner.emit_direct = self._emit_direct
        inner.emit_batch = self._emit_batch
        if hasattr(inner, "ack_many"):
            self.ack_many = self._ack_many
        if hasattr(inner, "fail_many"):
            self.fail_many = self._fail_many
        inner.report_error = self.report_error
        inner.run_in_background = self.run_in_background
        inner.call_soon_threadsafe = self.call_soon_threadsafe
        inner.open(conf, context)

    def _emit(self, values: Any, msg_id: Any = None, stream: Any = DEFAULT_STREAM) -> list[int]:
        targets: list[int] = self.emit(values, msg_id=msg_id, stream=stream)
        self.sink.emitted(msg_id)
        return targets

    def _emit_direct(self, task: Any, values: Any, msg_id: Any = None,
                     stream: Any = DEFAULT_STREAM) -> None:
        self.emit_direct(task, values, msg_id=msg_id, stream=stream)
        self.sink.emitted(msg_id)

    def _emit_many(self, values_list: Any, msg_ids: Any = None,
                   stream: Any = DEFAULT_STREAM) -> None:
        self._emit_rows(self.emit_many, values_list, msg_ids, stream)

    def _emit_batch(self, values_list: Any, msg_ids: Any = None,
                    stream: Any = DEFAULT_STREAM) -> Any:
        return self._emit_rows(self.emit_batch, values_list, msg_ids, stream)

    def _emit_rows(self, emit: Callable[..., Any], values_list: Any, msg_ids: Any,
                   stream: Any) -> Any:
        """``emit(values_list, msg_ids=..., stream=stream)`` (the task's ``emit_many`` or
        ``emit_batch``), then ``emitted(msg_id)`` for each row, with None for each when
        ``msg_ids`` is None. Rows and ids given as iterators are listed first, so ``emit`` and the
        sink see the same ones; ``msg_ids`` None reaches ``emit`` as None (untracked), not as a
        list of None ids (a batch with ids is one tracked unit). Returns what ``emit`` returned."""
        values_list = list(values_list)
        ids = list(msg_ids) if msg_ids is not None else [None] * len(values_list)
        result = emit(values_list, msg_ids=msg_ids if msg_ids is None else ids, stream=stream)
        for msg_id in ids:
            self.sink.emitted(msg_id)
        return result

    def _ack_many(self, msg_ids: Any) -> None:
        for msg_id in msg_ids:
            self.sink.ack(msg_id)
        self.inner.ack_many(msg_ids)

    def _fail_many(self, msg_ids: Any) -> None:
        for msg_id in msg_ids:
            self.sink.fail(msg_id)
        self.inner.fail_many(msg_ids)

    def next_tuple(self) -> None:
        self.inner.next_tuple()

    def ack(self, msg_id: Any) -> None:
        self.sink.ack(msg_id)
        self.inner.ack(msg_id)

    def fail(self, msg_id: Any) -> None:
        self.sink.fail(msg_id)
        self.inner.fail(msg_id)

    def activate(self) -> None:
        self.inner.activate()

    def deactivate(self) -> None:
        self.inner.deactivate()

    def close(self) -> None:
        self.inner.close()


def _wrapped(component: Any, kwargs: Mapping[str, Any] | None) -> tuple[type, dict[str, Any]]:
    if isinstance(component, type):
        return component, dict(kwargs or {})
    if hasattr(component, "component_class"):
        return component.component_class, {**component.component_kwargs, **(kwargs or {})}
    raise InvalidTopologyError(f"AckTracker wraps a Spout class or handle, not {component!r}")


class AckTracker(AckFailMapTracker):
    """A spout handle that runs ``spout`` (a Spout class with ``kwargs``, or another handle such
    as a ``FeederSpout``) and records every ack and fail it gets: pass it to ``set_spout`` and
    assert with ``is_acked``, ``assert_acked``, ``check_acks``... (Storm's ``AckTracker`` and
    ``AckFailMapTracker`` set as a spout's ack/fail delegate, for any spout)."""

    def __init__(self, spout: Any, kwargs: Mapping[str, Any] | None = None) -> None:
        super().__init__()
        cls, self._inner_kwargs = _wrapped(spout, kwargs)
        if not (isinstance(cls, type) and issubclass(cls, Spout)):
            raise InvalidTopologyError(f"AckTracker wraps spouts; {cls!r} is not a Spout subclass")
        self._inner = cls
        self.key = registry.register(self)

    def emitted(self, msg_id: Any) -> None:
        """Emits are not recorded; acks and fails are."""

    @property
    def component_class(self) -> type[Spout]:
        return TrackingSpout

    @property
    def component_kwargs(self) -> dict[str, Any]:
        return {"inner": class_path(self._inner), "inner_kwargs": self._inner_kwargs,
                "key": self.key}


class TrackedTopology:
    """A copy of ``topology`` whose spouts count what they emit and what gets acked or failed,
    for :meth:`wait` (Storm's ``TrackedTopology``): ``tracked = TrackedTopology(spec, cluster)``,
    ``cluster.submit_topology(name, conf, tracked.topology)``, then ``tracked_wait(tracked, 2)``.
    Counts are per tracked topology (Storm's are per cluster)."""

    def __init__(self, topology: TopologySpec, cluster: LocalCluster) -> None:
        self.cluster = cluster
        self.counts = _Counts()
        self._key = registry.register(self.counts)
        self._target = 0
        spec = copy.deepcopy(topology)
        for comp in spec.components.values():
            if comp.kind == SPOUT:
                comp.kwargs = {"inner": comp.class_path, "inner_kwargs": comp.kwargs,
                               "key": self._key}
                comp.class_path = class_path(TrackingSpout)
        self.topology = spec

    @property
    def completed(self) -> int:
        """Spout tuples fully processed so far: acked, failed, or emitted without message id."""
        return self.counts.completed

    def wait(self, n: int = 1, timeout: float = 30.0) -> None:
        """Wait until ``n`` more spout tuples (than at the end of the previous wait) were fully
        processed — acked or failed, or emitted untracked — and the cluster is idle. Under
        simulated time, each time the cluster is idle short of the target, time advances one
        second (so message timeouts fire, as Storm's ``trackedWait`` advances time). After
        ``timeout`` real seconds raise :class:`~stormpy.host.waiting.WaitTimeout` saying how
        far it got; a failed worker's error is raised at once."""
        if n < 0:
            raise ValueError(f"tracked wait for a negative number of tuples ({n})")
        target = self._target + n
        deadline = time.monotonic() + timeout
        simulated = isinstance(self.cluster.clock, SimulatedClock)
        while True:
            remaining = deadline - time.monotonic()
            try:
                if self.completed >= target:
                    self.cluster.wait_until_quiet(None, max(0.0, remaining))
                    if self.completed >= target:
                        break
                    continue
                if simulated:
                    self.cluster.wait_until_quiet(None, max(0.0, remaining))
                    if self.completed < target:
                        self.cluster.clock.advance(1.0)  # type: ignore[attr-defined]
                else:
                    self.cluster.wait_for(lambda: self.completed >= target, max(0.0, remaining),
                                          "tracked tuples")
            except TimeoutError:
                pass
            if time.monotonic() >= deadline:
                c = self.counts
                raise WaitTimeout(
                    f"tracked topology: timed out after {timeout:g}s waiting for {n} more spout "
                    f"tuples to be fully processed and the cluster to be idle: {self.completed} of "
                    f"{target} done (acked {c.acked}, failed {c.failed}, untracked "
                    f"{c.untracked})")
        self._target = target


def tracked_wait(tracked: TrackedTopology, n: int = 1, timeout: float = 30.0) -> None:
    """``tracked.wait(n, timeout)`` (Storm's ``Testing.trackedWait``)."""
    tracked.wait(n, timeout)
