"""The topology description that travels from the submitter to Nimbus and the workers.

A ``TopologySpec`` is structure only: components (class import path, constructor keyword
arguments, parallelism, task count, config, declared streams) and their subscriptions. It is
plain data that msgpack carries (``to_doc``/``from_doc``) and holds no pickled code.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import msgpack

from stormpy.topology import _grouping as g
from stormpy.topology._errors import InvalidTopologyError
from stormpy.topology._fields import Fields
from stormpy.topology._imports import MOVE_TO_MODULE_LEVEL, is_local_path
from stormpy.topology._streams import Stream
from stormpy.topology._tuple import SYSTEM_COMPONENT, SYSTEM_STREAM

#: the implicit ``__system`` stream of every component (Storm's: one ``event`` field)
SYSTEM_STREAM_SPEC = Stream(["event"], name=SYSTEM_STREAM)

SPEC_VERSION = 1
#: Component ids, stream ids and config keys: 1-256 characters, no whitespace or control characters
#: (checked with a full match, so a trailing newline is refused too).
IDENTIFIER_PATTERN = re.compile(r"[^\x00-\x20\x7f-\x9f\u2028\u2029]{1,256}")
#: Topology names: stricter, because a name is the start of its topology id, which names ZooKeeper
#: nodes and directories: 1-100 letters, digits, ``_``, ``.`` or ``-``, starting with a letter or
#: digit, no ``..`` (full match).
TOPOLOGY_NAME_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,99}")


def check_name(value: Any, what: str) -> str:
    """``value`` when it is a usable component id, stream id or config key (IDENTIFIER_PATTERN,
    full match); InvalidTopologyError naming ``what`` otherwise."""
    if not isinstance(value, str) or not IDENTIFIER_PATTERN.fullmatch(value):
        raise InvalidTopologyError(f"invalid {what} {value!r}: use 1-256 characters without whitespace or "
                                   "control characters")
    return value


def check_topology_name(name: Any) -> str:
    """``name`` when it is a usable topology name (TOPOLOGY_NAME_PATTERN); InvalidTopologyError
    otherwise."""
    if not isinstance(name, str) or not TOPOLOGY_NAME_PATTERN.fullmatch(name) or ".." in name:
        raise InvalidTopologyError(
            f"invalid topology name {name!r}: use 1-100 letters, digits, '_', '.' or '-', starting with "
            "a letter or digit")
    return name


SPOUT = "spout"
BOLT = "bolt"
#: component config keys Storm reads when it lays out tasks
TASKS_KEY = "topology.tasks"
MAX_TASK_PARALLELISM_KEY = "topology.max.task.parallelism"

#: Component config a component sets to say the shortest ``topology.message.timeout.secs`` it
#: works with (a windowed bolt holds tuples un-acked for its length + sliding interval);
#: the submit check (``stormpy.config.validate``) refuses a shorter timeout.
MIN_MESSAGE_TIMEOUT_KEY = "topology.message.timeout.secs.min"
#: Likewise the smallest ``topology.max.spout.pending`` (when set) a component needs (a count
#: window of N tuples never fills when fewer may be pending).
MIN_SPOUT_PENDING_KEY = "topology.max.spout.pending.min"


@dataclass(frozen=True)
class InputSpec:
    """A subscription: ``component``'s ``stream`` grouped by ``grouping``."""

    component: str
    stream: str
    grouping: g.Grouping

    def to_doc(self) -> dict[str, Any]:
        return {"component": self.component, "stream": self.stream,
                "grouping": self.grouping.to_doc()}

    @classmethod
    def from_doc(cls, doc: Mapping[str, Any]) -> InputSpec:
        return cls(doc["component"], doc["stream"], g.Grouping.from_doc(doc["grouping"]))


@dataclass
class ComponentSpec:
    """One spout or bolt of the topology."""

    id: str
    kind: str
    class_path: str
    kwargs: dict[str, Any] = field(default_factory=dict)
    parallelism: int = 1
    tasks: int | None = None
    config: dict[str, Any] = field(default_factory=dict)
    streams: dict[str, Stream] = field(default_factory=dict)
    inputs: list[InputSpec] = field(default_factory=list)

    @property
    def num_tasks(self) -> int:
        """Tasks asked for: the component config's ``topology.tasks`` (what Storm's
        ``setNumTasks`` sets), else ``tasks``, else the parallelism. ``topology.max.task.parallelism``
        may lower it when the layout is computed (``stormpy.topology._layout.task_count``)."""
        configured = self.config.get(TASKS_KEY)
        if configured is not None:
            return int(configured)  # validated as an int >= 1
        return self.tasks if self.tasks is not None else self.parallelism

    @property
    def num_executors(self) -> int:
        """Storm caps executors at the task count."""
        return min(self.parallelism, self.num_tasks)

    def output_stream(self, name: str) -> Stream | None:
        """A declared stream, the implicit ``__system`` stream, or None."""
        stream = self.streams.get(name)
        if stream is None and name == SYSTEM_STREAM:
            return SYSTEM_STREAM_SPEC
        return stream

    def to_doc(self) -> dict[str, Any]:
        return {
            "kind": self.kind, "class": self.class_path, "kwargs": self.kwargs,
            "parallelism": self.parallelism, "tasks": self.num_tasks, "config": self.config,
            "streams": {name: s.to_doc() for name, s in self.streams.items()},
            "inputs": [i.to_doc() for i in self.inputs],
        }

    @classmethod
    def from_doc(cls, cid: str, doc: Mapping[str, Any]) -> ComponentSpec:
        return cls(
            id=cid, kind=doc["kind"], class_path=doc["class"], kwargs=dict(doc.get("kwargs", {})),
            parallelism=doc.get("parallelism", 1), tasks=doc.get("tasks"),
            config=dict(doc.get("config", {})),
            streams={n: Stream(s.get("fields", ()), name=n, direct=s.get("direct", False))
                     for n, s in doc.get("streams", {}).items()},
            inputs=[InputSpec.from_doc(i) for i in doc.get("inputs", [])],
        )


@dataclass
class TopologySpec:
    """A whole topology: its components by id. Build it with ``TopologyBuilder``."""

    components: dict[str, ComponentSpec]
    version: int = SPEC_VERSION

    @property
    def spouts(self) -> dict[str, ComponentSpec]:
        return {c.id: c for c in self.components.values() if c.kind == SPOUT}

    @property
    def bolts(self) -> dict[str, ComponentSpec]:
        return {c.id: c for c in self.components.values() if c.kind == BOLT}

    def stream_fields(self, component: str, stream: str) -> Fields:
        """The fields of a declared stream or of the implicit ``__system`` one; KeyError else."""
        found = self.components[component].output_stream(stream)
        if found is None:
            raise KeyError(f"component {component!r} has no stream {stream!r}")
        return found.fields

    def subscribers(self, component: str, stream: str) -> list[tuple[str, g.Grouping]]:
        """(bolt id, grouping) of every subscription to ``component``'s ``stream``, sorted by id."""
        out = []
        for bolt in sorted(self.components):
            for inp in self.components[bolt].inputs:
                if inp.component == component and inp.stream == stream:
                    out.append((bolt, inp.grouping))
        return out

    def to_doc(self) -> dict[str, Any]:
        return {"version": self.version,
                "components": {cid: c.to_doc() for cid, c in sorted(self.components.items())}}

    @classmethod
    def from_doc(cls, doc: Any) -> TopologySpec:
        """Decode a spec document; InvalidTopologyError naming the part that is malformed."""
        if not isinstance(doc, Mapping) or not isinstance(doc.get("components"), Mapping):
            raise InvalidTopologyError("topology spec must be a mapping with a 'components' mapping")
        if doc.get("version") != SPEC_VERSION:
            raise InvalidTopologyError(f"unsupported topology spec version {doc.get('version')!r}")
        comps = {}
        for cid, cdoc in doc["components"].items():
            try:
                comps[cid] = ComponentSpec.from_doc(cid, cdoc)
            except (KeyError, TypeError, ValueError, AttributeError) as exc:
                raise InvalidTopologyError(f"component {cid!r}: malformed description ({exc})") \
                    from None
        spec = cls(comps)
        spec.validate()
        spec.require_portable()
        return spec

    def local_classes(self) -> list[tuple[str, str]]:
        """(component id, class path) of every component or custom grouping class defined
        inside a function (importable only in this process)."""
        out = []
        for cid, comp in sorted(self.components.items()):
            if is_local_path(comp.class_path):
                out.append((cid, comp.class_path))
            for inp in comp.inputs:
                if inp.grouping.custom_class and is_local_path(inp.grouping.custom_class):
                    out.append((cid, inp.grouping.custom_class))
        return out

    def require_portable(self) -> None:
        """InvalidTopologyError naming the first class defined inside a function and saying to
        move it to module level: what a cluster (another process) cannot import."""
        for cid, path in self.local_classes():
            name = path.partition(":")[2].partition("@")[0]
            raise InvalidTopologyError(f"component {cid!r}: class {name} {MOVE_TO_MODULE_LEVEL}")

    def validate(self) -> None:
        """Raise InvalidTopologyError naming the first problem: no spouts, a reserved or empty
        id, bad parallelism or task count, a subscription to an unknown component, stream or field,
        a grouping that does not fit its stream, or arguments msgpack cannot carry."""
        if not any(c.kind == SPOUT for c in self.components.values()):
            raise InvalidTopologyError("topology has no spouts")
        for cid, comp in self.components.items():
            _validate_component(cid, comp)
        for cid, comp in self.components.items():
            for inp in comp.inputs:
                _validate_input(self, cid, inp)


def refuse_local_classes(doc: Any) -> None:
    """Raise InvalidTopologyError (saying to move the class to module level) when a spec document
    names a component or grouping class defined inside a function; anything else, malformed
    parts included, is left to ``TopologySpec.from_doc``. The check a client makes before
    sending a spec to a cluster."""
    comps = doc.get("components") if isinstance(doc, Mapping) else None
    if not isinstance(comps, Mapping):
        return
    for cid, cdoc in comps.items():
        if not isinstance(cdoc, Mapping):
            continue
        paths = [cdoc.get("class")]
        for inp in cdoc.get("inputs") or ():
            grouping = inp.get("grouping") if isinstance(inp, Mapping) else None
            if isinstance(grouping, Mapping):
                paths.append(grouping.get("class"))
        for path in paths:
            if isinstance(path, str) and is_local_path(path):
                name = path.partition(":")[2].partition("@")[0]
                raise InvalidTopologyError(f"component {cid!r}: class {name} "
                                           f"{MOVE_TO_MODULE_LEVEL}")


def _validate_component(cid: str, comp: ComponentSpec) -> None:
    if not isinstance(cid, str) or not cid:
        raise InvalidTopologyError(f"component id must be a non-empty string, got {cid!r}")
    check_name(cid, "component id")
    for stream_id in comp.streams:
        check_name(stream_id, f"stream id of component {cid!r}")
    for key in comp.config:
        check_name(key, f"config key of component {cid!r}")
    if cid.startswith("__"):
        raise InvalidTopologyError(f"component id {cid!r}: ids starting with '__' are reserved")
    if comp.kind not in (SPOUT, BOLT):
        raise InvalidTopologyError(f"component {cid!r}: unknown kind {comp.kind!r}")
    for name, value in (("parallelism", comp.parallelism), (TASKS_KEY, comp.config.get(TASKS_KEY, 1)),
                        ("tasks", comp.num_tasks),
                        (MAX_TASK_PARALLELISM_KEY, comp.config.get(MAX_TASK_PARALLELISM_KEY, 1))):
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise InvalidTopologyError(f"component {cid!r}: {name} must be an integer >= 1, "
                                       f"got {value!r}")
    if comp.kind == SPOUT and comp.inputs:
        raise InvalidTopologyError(f"spout {cid!r} cannot subscribe to streams")
    if comp.kind == BOLT and not comp.inputs:
        raise InvalidTopologyError(f"bolt {cid!r} subscribes to no stream")
    checks: tuple[tuple[str, Any], ...] = (("constructor arguments", comp.kwargs),
                                           ("config", comp.config))
    for what, value in checks:
        try:
            msgpack.packb(value)
        except (TypeError, ValueError, OverflowError) as exc:
            raise InvalidTopologyError(f"component {cid!r}: {what} must be msgpack-serialisable "
                                       f"(plain data, no objects): {exc}") from None


def _validate_input(spec: TopologySpec, cid: str, inp: InputSpec) -> None:
    src = spec.components.get(inp.component)
    if src is None and inp.component == SYSTEM_COMPONENT:
        raise InvalidTopologyError(
            f"bolt {cid!r} subscribes to component {SYSTEM_COMPONENT!r}: stormpy has no such "
            "component to subscribe to (its tick tuples reach a bolt through "
            "topology.tick.tuple.freq.secs); for Storm's startup events subscribe to the "
            f"{SYSTEM_STREAM!r} stream of a spout or bolt, e.g. "
            f"all_grouping('spout', stream={SYSTEM_STREAM!r})")
    if src is None:
        raise InvalidTopologyError(f"bolt {cid!r} subscribes to unknown component "
                                   f"{inp.component!r}")
    stream = src.output_stream(inp.stream)
    if stream is None:
        raise InvalidTopologyError(
            f"bolt {cid!r} subscribes to unknown stream {inp.stream!r} of component "
            f"{inp.component!r} (declared streams: {sorted(src.streams)})")
    gr = inp.grouping
    if gr.type not in g.GROUPING_TYPES:
        raise InvalidTopologyError(f"bolt {cid!r}: unknown grouping {gr.type!r}")
    if gr.type in (g.FIELDS, g.PARTIAL_KEY):
        if not gr.fields:
            raise InvalidTopologyError(f"bolt {cid!r}: {gr.type} grouping on {inp.component}/"
                                       f"{inp.stream} names no fields")
        for f in gr.fields:
            if f not in stream.fields:
                raise InvalidTopologyError(
                    f"bolt {cid!r}: {gr.type} grouping on {inp.component}/{inp.stream} uses unknown "
                    f"field {f!r} (fields: {stream.fields.to_list()})")
    if gr.type == g.CUSTOM and not gr.custom_class:
        raise InvalidTopologyError(f"bolt {cid!r}: custom grouping without a class")
    if stream.direct and gr.type != g.DIRECT:
        raise InvalidTopologyError(f"bolt {cid!r}: stream {inp.component}/{inp.stream} is direct; "
                                   f"subscribe to it with direct_grouping, not {gr.type}")
    if gr.type == g.DIRECT and not stream.direct:
        raise InvalidTopologyError(f"bolt {cid!r}: direct_grouping on {inp.component}/{inp.stream}, "
                                   "which is not declared direct")
