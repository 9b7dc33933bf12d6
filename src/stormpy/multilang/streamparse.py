"""streamparse's topology DSL, read into a stormpy topology (streamparse itself is not needed).

A streamparse project keeps its components and its ``Topology`` class; only the import changes,
from ``streamparse`` to this module::

    from stormpy.multilang.streamparse import Bolt, Grouping, Spout, Topology

    class WordCount(Topology):
        config = {"topology.max.spout.pending": 100}
        word_spout = WordSpout.spec()
        count_bolt = WordCountBolt.spec(inputs={word_spout: Grouping.fields("word")}, par=2)

    topology = WordCount.to_topology()       # what `stormpy local` / `stormpy jar` load
    config = WordCount.config

``Bolt``, ``BatchingBolt``, ``TicklessBatchingBolt``, ``Spout`` and ``ReliableSpout`` are pystorm's
classes (what streamparse's are) with streamparse's ``spec(name=None, inputs=None, par=1,
config=None)`` classmethod; :func:`spec` does the same for any pystorm class. ``inputs`` is a list
of specs (shuffle grouping on their default stream) or a map from a spec, or ``spec["stream"]``,
to a ``Grouping``: ``SHUFFLE``, ``GLOBAL``, ``NONE``, ``ALL``, ``LOCAL_OR_SHUFFLE``, ``DIRECT`` or
``fields(*names)`` (streamparse's Java custom groupings have no equivalent). A spec's name is its
attribute name unless ``name=`` gives one. :meth:`Topology.to_topology` builds a
``TopologySpec`` whose components run in-process through :func:`pystorm_component` (or through
the shell host with ``shell=True``, as on Storm); :meth:`Topology.to_builder` gives the
``TopologyBuilder`` to add stormpy components first. Bad specs raise ValueError naming the
component.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

try:
    import pystorm
except ImportError as exc:  # pragma: no cover - the extra is installed in tests
    raise ImportError("stormpy.multilang.streamparse needs the pystorm package: pip install "
                      "'stormpy[multilang]'") from exc

from stormpy._public import publish
from stormpy.multilang._pystorm_spec import pystorm_component
from stormpy.topology._builder import BoltDeclarer, TopologyBuilder
from stormpy.topology._spec import TopologySpec
from stormpy.topology._streams import Stream
from stormpy.topology._tuple import DEFAULT_STREAM

__all__ = ["BatchingBolt", "Bolt", "ComponentSpec", "Grouping", "ReliableSpout", "Spout",
           "Stream", "TicklessBatchingBolt", "Topology", "spec"]

_KINDS = ("shuffle", "global", "none", "all", "local_or_shuffle", "direct", "fields")


@dataclass(frozen=True)
class StreamGrouping:
    """One of streamparse's groupings: ``kind`` and, for ``fields``, the field names."""

    kind: str
    fields: tuple[str, ...] = ()


class Grouping:
    """streamparse's ``Grouping``: the constants and ``fields(*names)``."""

    SHUFFLE = StreamGrouping("shuffle")
    GLOBAL = StreamGrouping("global")
    NONE = StreamGrouping("none")
    ALL = StreamGrouping("all")
    LOCAL_OR_SHUFFLE = StreamGrouping("local_or_shuffle")
    DIRECT = StreamGrouping("direct")

    @staticmethod
    def fields(*names: Any) -> StreamGrouping:
        """Fields grouping on ``names`` (given one by one or as one list)."""
        if len(names) == 1 and isinstance(names[0], list | tuple):
            names = tuple(names[0])
        if not names or not all(isinstance(n, str) and n for n in names):
            raise ValueError(f"Grouping.fields needs field names, got {names!r}")
        return StreamGrouping("fields", tuple(names))


@dataclass(frozen=True)
class StreamRef:
    """``spec["stream"]``: one stream of a component, as an input key."""

    spec: ComponentSpec
    stream: str


class ComponentSpec:
    """What ``Component.spec(...)`` returns: the class, its name (set by the ``Topology`` when
    None), inputs, parallelism and config."""

    def __init__(self, cls: type, name: str | None, inputs: Any, par: int | None,
                 config: Mapping[str, Any] | None) -> None:
        if not isinstance(cls, type) or not issubclass(cls, (pystorm.Bolt, pystorm.Spout)):
            raise ValueError(f"{cls!r} is not a pystorm Bolt or Spout subclass")
        self.cls = cls
        self.name = name
        self.spout = issubclass(cls, pystorm.Spout)
        what = f"{cls.__name__}.spec"
        if self.spout and inputs:
            raise ValueError(f"{what}: a spout takes no inputs")
        if par is not None and (isinstance(par, bool) or not isinstance(par, int) or par < 1):
            raise ValueError(f"{what}: par must be an integer >= 1, got {par!r}")
        if config is not None and not isinstance(config, Mapping):
            raise ValueError(f"{what}: config must be a map, got {config!r}")
        self.inputs = inputs
        self.par = par or 1
        self.config = dict(config or {})

    def __getitem__(self, stream: str) -> StreamRef:
        return StreamRef(self, stream)

    def __repr__(self) -> str:
        return f"<{self.cls.__name__}.spec {self.name or '(unnamed)'}>"

    def subscriptions(self) -> list[tuple[ComponentSpec, str, StreamGrouping]]:
        """``(source spec, stream, grouping)`` of each input; ValueError for bad ones."""
        what = f"component {self.name!r}"
        items: list[tuple[Any, Any]]
        if isinstance(self.inputs, Mapping):
            items = list(self.inputs.items())
        elif isinstance(self.inputs, list | tuple):
            items = [(source, Grouping.SHUFFLE) for source in self.inputs]
        else:
            raise ValueError(f"{what}: inputs must be a list of specs or a map of spec (or "
                             f"spec['stream']) to Grouping, got {self.inputs!r}")
        if not items:
            raise ValueError(f"{what}: a bolt needs inputs")
        out = []
        for source, grouping in items:
            ref = source if isinstance(source, StreamRef) else StreamRef(source, DEFAULT_STREAM)
            if not isinstance(ref.spec, ComponentSpec):
                raise ValueError(f"{what}: input {source!r} is not a component spec")
            if not isinstance(grouping, StreamGrouping) or grouping.kind not in _KINDS:
                raise ValueError(f"{what}: grouping {grouping!r} of input {source!r} is not one "
                                 "of Grouping's (Java custom groupings are not supported)")
            out.append((ref.spec, ref.stream, grouping))
        return out


def spec(cls: type, name: str | None = None, inputs: Any = None, par: int | None = None,
         config: Mapping[str, Any] | None = None) -> ComponentSpec:
    """streamparse's ``cls.spec(...)`` for any pystorm component class."""
    return ComponentSpec(cls, name, inputs, par, config)


class _Specs:
    @classmethod
    def spec(cls, name: str | None = None, inputs: Any = None, par: int | None = None,
             config: Mapping[str, Any] | None = None) -> ComponentSpec:
        """This component in a ``Topology`` (see the module doc)."""
        return ComponentSpec(cls, name, inputs, par, config)


class Bolt(_Specs, pystorm.Bolt):
    """pystorm's ``Bolt`` with streamparse's ``spec``."""


class BatchingBolt(_Specs, pystorm.BatchingBolt):
    """pystorm's ``BatchingBolt`` with streamparse's ``spec``."""


class TicklessBatchingBolt(_Specs, pystorm.TicklessBatchingBolt):
    """pystorm's ``TicklessBatchingBolt`` with streamparse's ``spec``."""


class Spout(_Specs, pystorm.Spout):
    """pystorm's ``Spout`` with streamparse's ``spec``."""


class ReliableSpout(_Specs, pystorm.ReliableSpout):
    """pystorm's ``ReliableSpout`` with streamparse's ``spec``."""


class Topology:
    """streamparse's ``Topology``: subclass it with ``ComponentSpec`` attributes (and a
    ``config`` map); :attr:`specs` lists them in definition order."""

    config: ClassVar[dict[str, Any]] = {}
    specs: ClassVar[list[ComponentSpec]] = []

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        specs: list[ComponentSpec] = []
        for attr, value in vars(cls).items():
            if isinstance(value, ComponentSpec):
                value.name = value.name or attr
                if any(s.name == value.name for s in specs):
                    raise ValueError(f"topology {cls.__name__}: two components named "
                                     f"{value.name!r}")
                specs.append(value)
        if not specs:
            raise ValueError(f"topology {cls.__name__} has no components (attributes set to "
                             "Component.spec(...))")
        cls.specs = specs

    @classmethod
    def to_builder(cls, *, shell: bool = False,
                   serializer: str | None = None) -> TopologyBuilder:
        """A ``TopologyBuilder`` holding the topology (to add stormpy components to it): each
        spec a :func:`pystorm_component` (in-process, or through the shell host with ``shell``)
        with its name, ``par`` and config, subscribed as its inputs say. ValueError naming the
        component for a bad input or one outside this topology."""
        b = TopologyBuilder()
        for s in cls.specs:
            assert s.name is not None
            component = pystorm_component(s.cls, shell=shell, serializer=serializer)
            if s.spout:
                b.set_spout(s.name, component, s.par, config=s.config)
                continue
            declarer = b.set_bolt(s.name, component, s.par, config=s.config)
            for source, stream, grouping in s.subscriptions():
                if not any(source is other for other in cls.specs):
                    raise ValueError(f"component {s.name!r}: input {source!r} is not a "
                                     f"component of topology {cls.__name__}")
                assert source.name is not None
                _subscribe(declarer, source.name, stream, grouping)
        return b

    @classmethod
    def to_topology(cls, *, shell: bool = False, serializer: str | None = None) -> TopologySpec:
        """The stormpy topology (:meth:`to_builder`'s, created)."""
        return cls.to_builder(shell=shell, serializer=serializer).create_topology()


def _subscribe(declarer: BoltDeclarer, source: str, stream: str, grouping: StreamGrouping) -> None:
    if grouping.kind == "fields":
        declarer.fields_grouping(source, list(grouping.fields), stream)
    else:
        getattr(declarer, f"{grouping.kind}_grouping")(source, stream)

publish(__name__, globals())
