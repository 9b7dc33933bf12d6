"""JoinBolt (Storm 2.x's ``org.apache.storm.bolt.JoinBolt``): an inner or left equi-join of
several streams over a window, with a projection of the joined fields.

Contract:

* Declared like a windowed bolt and passed to ``TopologyBuilder.set_bolt``::

      JoinBolt("users", "userId")                  # the first stream and its key
          .join("orders", "userId", "users")       # orders.userId == users.userId
          .left_join("stores", "city", "users")    # stores.city == users.city, users kept
          .select("userId, name, price, stores:city")
          .with_tumbling_window(Duration(seconds=10))

  ``selector`` says what names a stream: its source component (``"source"``, the default, as
  Storm's ``Selector.SOURCE``) or its stream id (``"stream"``). A join condition compares the new
  stream's key with the *prior* stream's own key (the key it was added with), as in Storm; the
  prior stream must already be part of the join.
* Every window (its ``get()``, all streams mixed) is joined in join order: the first stream's
  tuples are probed against a hash of each further stream's tuples by key. An inner join keeps a
  row when a match exists, a left join keeps it with the other stream's fields None when none
  does (also when the row's key is None: SQL's rule; Storm drops such rows). A key that is None
  or missing never matches.
* ``select`` names the output fields: ``name``, ``stream:name`` or nested ``a.b.c`` (map lookups
  inside field ``a``). An unqualified field takes the first non-None value among the row's tuples
  in join order; a qualified one reads that stream's tuple only. Output field names are the
  selectors as written (``stream:name`` included), so they must be distinct.
* Each output row is emitted on the output stream (default ``default``) anchored to exactly the
  input tuples it joins (Storm's explicit anchoring); inputs are acked by the windowed executor
  once they left every window (docs/windowing-state.md). A sliding window joins its whole content
  every time, so a row whose tuples stay in several windows is emitted once per window.
* Refused when the bolt is added to the builder, naming the component: no window, no ``select``,
  a stream joined twice, a prior stream not joined before, a ``stream:`` qualifier on a join key,
  a ``select`` naming a stream outside the join, duplicate output field names; and by
  ``create_topology``: a joined stream the bolt does not subscribe to, a subscription outside the
  join, a key, selected field or timestamp field missing from a stream's declared fields.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Self

from stormpy.topology._errors import InvalidTopologyError
from stormpy.topology._imports import class_path
from stormpy.topology._spec import TopologySpec
from stormpy.topology._streams import Stream
from stormpy.topology._tuple import DEFAULT_STREAM, Tuple
from stormpy.windowing._bolt import WindowedBolt, WindowedBoltExecutor
from stormpy.windowing._config import Duration, WindowConfig, WindowConfigError
from stormpy.windowing._manager import Window

__all__ = ["INNER", "LEFT", "SOURCE", "STREAM", "JoinBolt", "JoinBoltExecutor", "JoinDeclaration",
           "JoinPlan", "JoinWindowBolt", "hash_join", "hashable", "lookup", "project"]

log = logging.getLogger("stormpy.windowing")

#: What names a joined stream (Storm's ``JoinBolt.Selector``).
SOURCE, STREAM = "source", "stream"
#: Join kinds.
INNER, LEFT = "inner", "left"


@dataclass(frozen=True)
class FieldRef:
    """A field selector: ``stream`` (None: any joined stream), ``path`` (field, then map keys),
    ``name`` (the output field name, as written)."""

    stream: str | None
    path: tuple[str, ...]
    name: str


def parse_field(text: Any, setting: str, *, qualified: bool = True) -> FieldRef:
    """``"stream:a.b"`` / ``"a.b"`` (Storm's ``FieldSelector``); WindowConfigError naming
    ``setting`` when malformed, or qualified where ``qualified`` is False (a join key)."""
    if not isinstance(text, str) or not text.strip():
        raise WindowConfigError(setting, f"a field name must be a non-empty string, got {text!r}")
    name = field = text.strip()
    stream: str | None = None
    if ":" in name:
        if not qualified:
            raise WindowConfigError(setting, f"{name!r}: a join key takes no 'stream:' qualifier "
                                             "(the stream is implicit)")
        head, _, field = (part.strip() for part in name.partition(":"))
        stream = head or None  # ':a' is 'a', as in Storm
        name = f"{head}:{field}" if head else field
    path = tuple(part.strip() for part in field.split("."))
    if ":" in field or not all(path):
        raise WindowConfigError(setting, f"{text!r} is not a field, 'stream:field' or a nested "
                                         "'field.key' selector")
    return FieldRef(stream, path, name)


@dataclass(frozen=True)
class JoinStep:
    """One joined stream: its name and key; how it joins (kind, prior stream), None for the
    first stream."""

    stream: str
    key: FieldRef
    kind: str | None = None
    prior: str | None = None


class JoinPlan:
    """A validated join (from :meth:`JoinBolt.to_doc`'s document): ``selector``, ``steps`` in join
    order, ``select`` (the output fields), ``output_stream``."""

    def __init__(self, doc: Mapping[str, Any]) -> None:
        selector = doc.get("selector")
        if selector not in (SOURCE, STREAM):
            raise WindowConfigError("selector", f"must be 'source' or 'stream', got {selector!r}")
        self.selector: str = selector
        self.steps: list[JoinStep] = []
        index: dict[str, int] = {}
        for i, (stream, key, kind, prior) in enumerate(doc.get("streams") or ()):
            method = {INNER: "join", LEFT: "left_join"}.get(kind, kind)
            what = "JoinBolt" if i == 0 else f"{method}({stream!r}, {key!r}, {prior!r})"
            if i and kind not in (INNER, LEFT):
                raise WindowConfigError(what, f"unknown join kind {kind!r}")
            if not isinstance(stream, str) or not stream:
                raise WindowConfigError(what, f"a stream must be a non-empty name, got {stream!r}")
            if stream in index:
                raise WindowConfigError(what, f"{stream!r} is already part of the join; a stream "
                                              "joins once")
            if i and prior not in index:
                raise WindowConfigError(what, f"the prior stream {prior!r} was not joined before "
                                              f"(joined so far: {list(index)})")
            ref = parse_field(key, f"{what}: key", qualified=False)
            self.steps.append(JoinStep(stream, ref, kind if i else None, prior if i else None))
            index[stream] = i
        if not self.steps:
            raise WindowConfigError("JoinBolt", "no stream to join")
        self.index = index
        fields = doc.get("select")
        if not fields:
            raise WindowConfigError("select", "a JoinBolt needs select(...) naming its output "
                                              "fields")
        self.select = [parse_field(f, "select") for f in fields]
        seen: set[str] = set()
        for ref in self.select:
            if ref.stream is not None and ref.stream not in index:
                raise WindowConfigError("select", f"{ref.name!r} names stream {ref.stream!r}, "
                                                  f"which is not joined (joined: {list(index)})")
            if ref.name in seen:
                raise WindowConfigError("select", f"output field {ref.name!r} is selected twice; "
                                                  "qualify one as 'stream:field'")
            seen.add(ref.name)
        out = doc.get("output_stream") or DEFAULT_STREAM
        if not isinstance(out, str) or out.startswith("__"):
            raise WindowConfigError("output stream", f"must be a name not starting with '__', "
                                                     f"got {out!r}")
        self.output_stream: str = out

    @property
    def output_fields(self) -> list[str]:
        return [ref.name for ref in self.select]

    def stream_of(self, tup: Tuple) -> str:
        return tup.component if self.selector == SOURCE else tup.stream


# -- the join itself -------------------------------------------------------------------------
def lookup(tup: Tuple | None, path: tuple[str, ...]) -> Any:
    """The value at ``path`` in ``tup`` (a field, then map keys); None when any part is
    missing or an inner value is not a map."""
    if tup is None:
        return None
    fields = tup.fields
    if fields is None or path[0] not in fields:
        return None
    value = tup.values[fields.index_of(path[0])]
    for part in path[1:]:
        if not isinstance(value, Mapping):
            return None
        value = value.get(part)
    return value


def hashable(value: Any) -> Any:
    """A dict key for a join key value (lists and maps, which msgpack carries, made hashable)."""
    try:
        hash(value)
        return value
    except TypeError:
        if isinstance(value, Mapping):
            return ("$map", tuple(sorted(((hashable(k), hashable(v))
                                          for k, v in value.items()), key=repr)))
        return ("$list", tuple(hashable(v) for v in value))


Row = list[Tuple | None]


def hash_join(plan: JoinPlan, tuples: Iterable[Tuple],
              unknown: Callable[[Tuple], None] | None = None) -> list[Row]:
    """Join ``tuples`` (a window) by ``plan``: the rows, each one tuple per joined stream in join
    order (None where a left join found no match). Tuples of streams outside the join go to
    ``unknown``."""
    steps = plan.steps
    first = steps[0].stream
    probe: list[Row] = []
    builds: dict[str, dict[Any, list[Tuple]]] = {s.stream: {} for s in steps[1:]}
    keys = {s.stream: s.key.path for s in steps[1:]}
    by_source = plan.selector == SOURCE
    for tup in tuples:
        name = tup.component if by_source else tup.stream
        if name == first:
            probe.append([tup])
            continue
        table = builds.get(name)
        if table is None:
            if unknown is not None:
                unknown(tup)
            continue
        key = lookup(tup, keys[name])
        if key is not None:
            table.setdefault(hashable(key), []).append(tup)
    for step in steps[1:]:
        table = builds[step.stream]
        prior = plan.index[step.prior] if step.prior is not None else 0
        prior_key = steps[prior].key.path
        left = step.kind == LEFT
        rows: list[Row] = []
        for row in probe:
            key = lookup(row[prior], prior_key)
            matches = table.get(hashable(key)) if key is not None else None
            if matches:
                rows.extend([*row, match] for match in matches)
            elif left:
                row.append(None)
                rows.append(row)
        probe = rows
    return probe


def project(plan: JoinPlan, row: Row) -> list[Any]:
    """The selected values of one row."""
    out: list[Any] = []
    for ref in plan.select:
        if ref.stream is not None:
            out.append(lookup(row[plan.index[ref.stream]], ref.path))
            continue
        value = None
        for tup in row:
            value = lookup(tup, ref.path)
            if value is not None:
                break
        out.append(value)
    return out


class JoinWindowBolt(WindowedBolt):
    """The windowed bolt that runs a :class:`JoinPlan` (built by :class:`JoinBolt`)."""

    @classmethod
    def declare_outputs(cls, kwargs: Mapping[str, Any]) -> dict[str, Stream]:
        plan = JoinPlan(kwargs["join"])
        return {plan.output_stream: Stream(plan.output_fields, name=plan.output_stream)}

    def __init__(self, join: Mapping[str, Any]) -> None:
        self.plan = JoinPlan(join)
        self.unknown = 0

    def note_unknown(self, tup: Tuple) -> None:
        """Count (and log now and then) a tuple of a stream outside the join."""
        self.unknown += 1
        if self.unknown == 1 or self.unknown % 1000 == 0:
            log.warning("join bolt: %d tuple(s) from %s/%s left out: that %s is not part of the "
                        "join", self.unknown, tup.component, tup.stream, self.plan.selector)

    def execute(self, window: Window) -> None:  # type: ignore[override]
        plan = self.plan
        stream = plan.output_stream
        for row in hash_join(plan, window.get(), self.note_unknown):
            self.emit(project(plan, row), [t for t in row if t is not None], stream)


# -- declaring -------------------------------------------------------------------------------
class JoinDeclaration:
    """What join declarations share: the streams (``selector``), ``select``, the output stream and
    the windowed bolts' event-time options. Every method returns a new declaration."""

    def __init__(self, source: str, key: str, selector: str = SOURCE) -> None:
        self._selector = selector
        self._streams: tuple[tuple[Any, Any, str | None, str | None], ...] = (
            (source, key, None, None),)
        self._select: tuple[str, ...] = ()
        self._output: str | None = None
        self._time: dict[str, Any] = {}

    def _with(self, **changes: Any) -> Self:
        new = copy.copy(self)
        for name, value in changes.items():
            setattr(new, name, value)
        return new

    def select(self, fields: str | Iterable[str]) -> Self:
        """The output fields: ``"a, s2:b, c.d"`` or a list of such selectors."""
        names = fields.split(",") if isinstance(fields, str) else list(fields)
        return self._with(_select=tuple(names))

    def with_output_stream(self, stream: str) -> Self:
        """Emit on ``stream`` instead of the default stream."""
        return self._with(_output=stream)

    def _time_option(self, **option: Any) -> Self:
        return self._with(_time={**self._time, **option})

    def with_timestamp_field(self, name: str) -> Self:
        """Event time from field ``name`` (ms) of every joined stream."""
        return self._time_option(timestamp_field=name)

    def with_timestamp_extractor(self, extractor: Callable[[Tuple], int] | str) -> Self:
        """Event time from ``extractor(tuple)`` (ms): a module-level function or its path."""
        path = extractor if isinstance(extractor, str) else class_path(extractor)  # type: ignore[arg-type]
        return self._time_option(timestamp_extractor=path)

    def with_lag(self, lag: Duration) -> Self:
        return self._time_option(lag=lag)

    def with_watermark_interval(self, interval: Duration) -> Self:
        return self._time_option(watermark_interval=interval)

    def with_late_tuple_stream(self, stream: str) -> Self:
        return self._time_option(late_stream=stream)

    def to_doc(self) -> dict[str, Any]:
        """The join as plain data (validated by :class:`JoinPlan`)."""
        return {"selector": self._selector, "streams": [list(s) for s in self._streams],
                "select": list(self._select), "output_stream": self._output}


class JoinBolt(JoinDeclaration):
    """Storm's ``JoinBolt`` in Python style: ``JoinBolt(source, key, selector="source")``, then
    ``join``/``left_join``, ``select``, a window (``with_window``/``with_tumbling_window``) and the
    windowed bolts' event-time options; pass it to ``TopologyBuilder.set_bolt``. Every method
    returns a new JoinBolt. See the module doc for the semantics."""

    def __init__(self, source: str, key: str, selector: str = SOURCE) -> None:
        super().__init__(source, key, selector)
        self._length: Any = None
        self._slide: Any = None

    def join(self, other: str, key: str, prior: str) -> JoinBolt:
        """Inner join: ``other.key == prior.<prior's key>`` (``prior`` already joined)."""
        return self._with(_streams=(*self._streams, (other, key, INNER, prior)))

    def left_join(self, other: str, key: str, prior: str) -> JoinBolt:
        """Left join: like :meth:`join`, keeping the rows without a match in ``other``."""
        return self._with(_streams=(*self._streams, (other, key, LEFT, prior)))

    def with_window(self, length: Any, sliding_interval: Any | None = None) -> JoinBolt:
        """A sliding window: Count(n) or Duration(...) for each (one tuple by default)."""
        return self._with(_length=length, _slide=sliding_interval)

    def with_tumbling_window(self, length: Any) -> JoinBolt:
        return self._with(_length=length, _slide=length)

    def window_doc(self) -> dict[str, Any] | None:
        if self._length is None:
            return None
        return WindowConfig.sliding(self._length, self._slide).with_(**self._time).to_doc()

    @property
    def component_class(self) -> type[JoinBoltExecutor]:
        return JoinBoltExecutor

    @property
    def component_kwargs(self) -> dict[str, Any]:
        return {"_window": self.window_doc(), "_bolt": class_path(JoinWindowBolt),
                "join": self.to_doc()}


class JoinBoltExecutor(WindowedBoltExecutor):
    """The windowed executor of a :class:`JoinBolt`; adds its build-time checks (a window given,
    the join valid, and, on the finished topology, the join against the bolt's inputs)."""

    #: The keyword arguments the declaration sets (anything else came from set_bolt's kwargs).
    OWN_KWARGS: frozenset[str] = frozenset({"_window", "_bolt", "join"})

    @classmethod
    def _check(cls, kwargs: Mapping[str, Any]) -> JoinPlan:
        if kwargs.get("_window") is None:
            raise WindowConfigError("window", "a JoinBolt needs with_window(...) or "
                                              "with_tumbling_window(...)")
        extra = sorted(set(kwargs) - cls.OWN_KWARGS)
        if extra:
            raise WindowConfigError("kwargs", f"a join bolt takes no constructor arguments, got "
                                              f"{extra}")
        return JoinPlan(kwargs["join"])

    @classmethod
    def declare_outputs(cls, kwargs: Mapping[str, Any]) -> dict[str, Stream]:
        cls._check(kwargs)
        return super().declare_outputs(kwargs)

    @classmethod
    def declare_config(cls, kwargs: Mapping[str, Any]) -> Mapping[str, Any]:
        if kwargs.get("_window") is None:
            return {}  # refused by declare_outputs, which the builder calls first
        return super().declare_config(kwargs)

    @classmethod
    def finish_topology(cls, spec: TopologySpec, component_id: str) -> None:
        """Check the join against the bolt's inputs and their declared fields."""
        comp = spec.components[component_id]
        plan = JoinPlan(comp.kwargs["join"])
        ts_field = (comp.kwargs.get("_window") or {}).get("timestamp_field")
        subscribed: set[str] = set()
        declared: dict[str, list[tuple[str, Any]]] = {s.stream: [] for s in plan.steps}
        for inp in comp.inputs:
            if inp.stream.startswith("$"):
                continue  # machinery (checkpoints, transactions)
            name = inp.component if plan.selector == SOURCE else inp.stream
            if name not in declared:
                raise InvalidTopologyError(
                    f"component {component_id!r}: it subscribes to {inp.component}/{inp.stream}, "
                    f"but {plan.selector} {name!r} is not part of the join (joined: "
                    f"{list(declared)})")
            subscribed.add(name)
            upstream = spec.components.get(inp.component)
            stream = upstream.streams.get(inp.stream) if upstream is not None else None
            if stream is not None:  # an unknown one is reported by TopologySpec.validate
                declared[name].append((f"{inp.component}/{inp.stream}", stream.fields))
        for step in plan.steps:
            if step.stream not in subscribed:
                raise InvalidTopologyError(
                    f"component {component_id!r}: joined {plan.selector} {step.stream!r} is not "
                    f"one of its inputs; subscribe to it (e.g. fields_grouping) or fix the join")
            needed = [("key", step.key.path[0])]
            if ts_field:
                needed.append(("timestamp field", ts_field))
            needed += [("selected field", ref.path[0]) for ref in plan.select
                       if ref.stream == step.stream]
            for source, fields in declared[step.stream]:
                for what, field in needed:
                    if field not in fields:
                        raise InvalidTopologyError(
                            f"component {component_id!r}: {what} {field!r} of joined stream "
                            f"{step.stream!r} is not a field of {source} (fields: "
                            f"{list(fields)})")
        every = [fields for sources in declared.values() for _s, fields in sources]
        for ref in plan.select:
            if ref.stream is None and every and not any(ref.path[0] in f for f in every):
                raise InvalidTopologyError(
                    f"component {component_id!r}: selected field {ref.name!r} is a field of no "
                    f"joined stream")
