"""TopologyBuilder: the fluent way to describe a topology, as in Storm."""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from typing import Any, cast

from stormpy.topology import _grouping as g
from stormpy.topology._component import Bolt, Component, CustomStreamGrouping, Spout, check_entry_point
from stormpy.topology._errors import InvalidTopologyError
from stormpy.topology._imports import class_path
from stormpy.topology._spec import (
    BOLT,
    MAX_TASK_PARALLELISM_KEY,
    SPOUT,
    TASKS_KEY,
    ComponentSpec,
    InputSpec,
    TopologySpec,
)
from stormpy.topology._tuple import DEFAULT_STREAM

ComponentSource = Any  # a Component subclass, or an object with component_class/component_kwargs


def resolve_component(component: Any, kwargs: Mapping[str, Any] | None, cid: str, *,
                      what: str = "component", base: type | None = None,
                      module_level: bool = False) -> tuple[type, dict[str, Any]]:
    """The class and constructor arguments of a component as a builder receives it: a class
    (plus ``kwargs``) or a handle exposing ``component_class``/``component_kwargs`` (how the
    testing kit's feeder spouts and capture bolts are passed), never an instance.

    Contract: raises :class:`InvalidTopologyError` naming ``what`` and ``cid`` for an instance,
    for a class that is not a subclass of ``base`` (when given), and, with ``module_level``, for
    a class defined inside a function (workers import component classes by path). A class
    defined inside a function is otherwise accepted for in-process runs; a cluster refuses it
    (see ``topology.imports``)."""
    cls: Any
    if isinstance(component, type):
        cls, kw = component, dict(kwargs or {})
    elif hasattr(component, "component_class"):
        cls = component.component_class
        kw = {**component.component_kwargs, **(kwargs or {})}
    else:
        kind = f"{base.__name__} " if base is not None else ""
        raise InvalidTopologyError(
            f"{what} {cid!r}: pass the {kind}class and its constructor arguments as "
            f"kwargs={{...}}, not an instance ({component!r:.80})")
    if base is not None and not (isinstance(cls, type) and issubclass(cls, base)):
        raise InvalidTopologyError(f"{what} {cid!r}: {cls!r} is not a {base.__name__} subclass")
    if module_level and "<locals>" in cls.__qualname__:
        raise InvalidTopologyError(
            f"{what} {cid!r}: {cls.__qualname__} is defined inside a function; workers import "
            "component classes by path, so define it at module level")
    return cls, kw


class ComponentDeclarer:
    """Returned by ``set_spout``/``set_bolt``: set task count and config, add subscriptions."""

    def __init__(self, spec: ComponentSpec) -> None:
        self._spec = spec

    @property
    def id(self) -> str:
        return self._spec.id

    def set_num_tasks(self, n: int) -> ComponentDeclarer:
        """Run the component as ``n`` tasks spread over its executors (the parallelism); like
        Storm's ``setNumTasks`` it sets the component config ``topology.tasks``, so a later
        ``add_configuration("topology.tasks", m)`` replaces it. A rebalance can then change the
        executors up to ``n``."""
        self._spec.tasks = n
        self._spec.config[TASKS_KEY] = n
        return self

    def set_max_task_parallelism(self, n: int | None) -> ComponentDeclarer:
        """Cap this component's tasks (and so its executors) at ``n`` (Storm's
        ``topology.max.task.parallelism`` in the component config; overrides the topology's)."""
        if n is None:
            self._spec.config.pop(MAX_TASK_PARALLELISM_KEY, None)
            return self
        return self.add_configuration(MAX_TASK_PARALLELISM_KEY, n)

    def add_configuration(self, key: str, value: Any) -> ComponentDeclarer:
        self._spec.config[key] = value
        return self

    def add_configurations(self, conf: Mapping[str, Any]) -> ComponentDeclarer:
        self._spec.config.update(conf)
        return self

    def set_max_spout_pending(self, n: int | None) -> ComponentDeclarer:
        return self.add_configuration("topology.max.spout.pending", n)

    def set_debug(self, on: bool) -> ComponentDeclarer:
        return self.add_configuration("topology.debug", on)


class BoltDeclarer(ComponentDeclarer):
    """Subscriptions of a bolt. Every method returns the declarer, so calls chain."""

    def grouping(self, component: str, grouping: g.Grouping,
                 stream: str = DEFAULT_STREAM) -> BoltDeclarer:
        if self._spec.kind != BOLT:
            raise InvalidTopologyError(f"spout {self._spec.id!r} cannot subscribe to streams")
        self._spec.inputs.append(InputSpec(component, stream, grouping))
        return self

    def shuffle_grouping(self, component: str, stream: str = DEFAULT_STREAM) -> BoltDeclarer:
        """Tuples spread evenly over the bolt's tasks."""
        return self.grouping(component, g.Grouping(g.SHUFFLE), stream)

    def fields_grouping(self, component: str, fields: Iterable[str] | str,
                        stream: str = DEFAULT_STREAM) -> BoltDeclarer:
        """Tuples with equal values of ``fields`` always go to the same task."""
        names = (fields,) if isinstance(fields, str) else tuple(fields)
        return self.grouping(component, g.Grouping(g.FIELDS, names), stream)

    def partial_key_grouping(self, component: str, fields: Iterable[str] | str,
                             stream: str = DEFAULT_STREAM) -> BoltDeclarer:
        """Like fields grouping, but each key may go to one of two tasks, the less loaded one."""
        names = (fields,) if isinstance(fields, str) else tuple(fields)
        return self.grouping(component, g.Grouping(g.PARTIAL_KEY, names), stream)

    def all_grouping(self, component: str, stream: str = DEFAULT_STREAM) -> BoltDeclarer:
        """Every task receives every tuple."""
        return self.grouping(component, g.Grouping(g.ALL), stream)

    def global_grouping(self, component: str, stream: str = DEFAULT_STREAM) -> BoltDeclarer:
        """The whole stream goes to the task with the lowest id."""
        return self.grouping(component, g.Grouping(g.GLOBAL), stream)

    def none_grouping(self, component: str, stream: str = DEFAULT_STREAM) -> BoltDeclarer:
        """No preference (currently a random task)."""
        return self.grouping(component, g.Grouping(g.NONE), stream)

    def direct_grouping(self, component: str, stream: str = DEFAULT_STREAM) -> BoltDeclarer:
        """The emitter picks the task with ``emit_direct``; the stream must be declared direct."""
        return self.grouping(component, g.Grouping(g.DIRECT), stream)

    def local_or_shuffle_grouping(self, component: str,
                                  stream: str = DEFAULT_STREAM) -> BoltDeclarer:
        """Shuffle among the bolt's tasks in the emitter's worker when it has any, else all."""
        return self.grouping(component, g.Grouping(g.LOCAL_OR_SHUFFLE), stream)

    def custom_grouping(self, component: str, grouping_class: type[CustomStreamGrouping] | str,
                        stream: str = DEFAULT_STREAM,
                        kwargs: Mapping[str, Any] | None = None) -> BoltDeclarer:
        """A ``CustomStreamGrouping`` subclass (or its import path) built with ``kwargs``."""
        path = grouping_class if isinstance(grouping_class, str) else class_path(grouping_class)
        return self.grouping(component, g.Grouping(g.CUSTOM, custom_class=path,
                                                   custom_kwargs=dict(kwargs or {})), stream)


class TopologyBuilder:
    """Describe spouts, bolts and their subscriptions, then ``create_topology()``."""

    def __init__(self) -> None:
        self._components: dict[str, ComponentSpec] = {}
        self._classes: dict[str, type[Component]] = {}

    def _add(self, cid: str, kind: str, component: ComponentSource, parallelism: int,
             kwargs: Mapping[str, Any] | None, tasks: int | None,
             config: Mapping[str, Any] | None, base: type) -> ComponentSpec:
        if not isinstance(cid, str) or not cid:
            raise InvalidTopologyError(f"component id must be a non-empty string, got {cid!r}")
        if cid in self._components:
            raise InvalidTopologyError(f"duplicate component id {cid!r}")
        resolved, kw = resolve_component(component, kwargs, cid, base=base)
        cls = cast(type[Component], resolved)
        try:
            check_entry_point(cls)
            streams = cls.declare_outputs(kw)
        except ValueError as exc:
            raise InvalidTopologyError(f"component {cid!r}: {exc}") from None
        spec = ComponentSpec(id=cid, kind=kind, class_path=class_path(cls), kwargs=kw,
                             parallelism=parallelism, tasks=tasks,
                             config={**cls.declare_config(kw), **(config or {})}, streams=streams)
        self._components[cid] = spec
        self._classes[cid] = cls
        return spec

    def set_spout(self, component_id: str, spout: ComponentSource, parallelism: int = 1, *,
                  kwargs: Mapping[str, Any] | None = None, tasks: int | None = None,
                  config: Mapping[str, Any] | None = None) -> ComponentDeclarer:
        """Add a spout: its class, executors (``parallelism``), tasks, constructor ``kwargs``."""
        return ComponentDeclarer(self._add(component_id, SPOUT, spout, parallelism, kwargs, tasks,
                                           config, Spout))

    def set_bolt(self, component_id: str, bolt: ComponentSource, parallelism: int = 1, *,
                 kwargs: Mapping[str, Any] | None = None, tasks: int | None = None,
                 config: Mapping[str, Any] | None = None) -> BoltDeclarer:
        """Add a bolt; subscribe it with the returned declarer's ``*_grouping`` methods."""
        return BoltDeclarer(self._add(component_id, BOLT, bolt, parallelism, kwargs, tasks, config,
                                      Bolt))

    def create_topology(self) -> TopologySpec:
        """The validated topology; InvalidTopologyError names what is wrong. Each component class
        may complete it first (``Component.finish_topology``); the builder keeps its own copy."""
        spec = TopologySpec(copy.deepcopy(self._components))
        for cid, cls in self._classes.items():
            cls.finish_topology(spec, cid)
        spec.validate()
        return spec
