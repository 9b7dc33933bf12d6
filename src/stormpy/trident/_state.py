"""Trident state: map states of the three kinds over the state layer's stores, their factories,
the query functions ``MapGet``/``TupleCollectionGet`` and ``StateUpdater`` (Storm's
``trident.state``, ``state.map.{NonTransactionalMap,TransactionalMap,OpaqueMap}`` and
``testing.MemoryMapState``).

Each key (the group-by values) is one document ``[txid, previous, current]`` in a
:class:`~stormpy.state._base.Store` — the layout of :class:`stormpy.transactional.TransactionalState`
— and a batch's writes go in one ``put_many`` (atomic on memory and SQLite, key by key on
ZooKeeper, where a replay repairs a partial write):

* ``non_transactional``: ``current`` is replaced; a replayed batch is applied again;
* ``transactional``: a key whose stored txid is the batch's is left alone (this batch was already
  applied: commits are in txid order and a transactional spout replays a batch identically);
* ``opaque``: a key whose stored txid is the batch's is recomputed from ``previous`` (correct even
  when the replayed batch differs, as an opaque spout's may).

:func:`read_state` reads a SQLite or ZooKeeper map state back as plain values (``{("the",):
1000, ...}``), outside any topology: what a user inspects after a run, instead of the stored
msgpack documents.
"""

from __future__ import annotations

import base64
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import msgpack

from stormpy.cluster.paths import encode_segment
from stormpy.cluster.zk_hosts import hosts_from_config
from stormpy.config import SettingError
from stormpy.state._base import Store
from stormpy.state._redis_store import open_redis_store, redis_config
from stormpy.state._settings import state_settings
from stormpy.state._sqlite import SqliteStore
from stormpy.state._zookeeper import open_zk_store
from stormpy.topology._imports import import_object
from stormpy.transactional._state import OpaqueValue, TransactionalValue
from stormpy.trident._operation import Operation, TridentCollector, TridentTuple
from stormpy.trident._parquet import ParquetState

__all__ = ["KINDS", "MapGet", "MapPutUpdater", "MapState", "NON_TRANSACTIONAL", "OPAQUE",
           "ParquetWrite", "QueryFunction",
           "StateFactory", "StateUpdater", "TRANSACTIONAL", "TupleCollectionGet", "read_state"]

NON_TRANSACTIONAL = "non_transactional"
TRANSACTIONAL = "transactional"
OPAQUE = "opaque"
KINDS = (NON_TRANSACTIONAL, TRANSACTIONAL, OPAQUE)
#: ``external``: a subclass of StateFactory outside this package (e.g. the Kafka sink's) that
#: builds its own state; its doc carries its import path under ``factory``
BACKENDS = ("memory", "default", "sqlite", "zookeeper", "redis", "parquet", "external")


def encode_key(key: Sequence[Any]) -> str:
    return "k" + base64.urlsafe_b64encode(msgpack.packb(list(key))).decode()


def decode_key(name: str) -> list[Any]:
    return list(msgpack.unpackb(base64.urlsafe_b64decode(name[1:]), raw=False))


class MapState:
    """Keys (lists of values) → values of one kind, in ``store``. The bolt calls
    ``begin_commit(txid)`` before a batch's updates and ``commit(txid)`` after them."""

    def __init__(self, store: Store, kind: str) -> None:
        if kind not in KINDS:
            raise SettingError("trident state kind", f"{kind!r} is not one of {', '.join(KINDS)}")
        self.store = store
        self.kind = kind
        self.txid: int | None = None

    def begin_commit(self, txid: int) -> None:
        self.txid = txid

    def commit(self, txid: int) -> None:
        self.txid = None

    def _docs(self, keys: Sequence[Sequence[Any]]) -> list[list[Any] | None]:
        names = [encode_key(key) for key in keys]
        found = self.store.get_many(names)  # one round trip on Redis
        return [None if found.get(n) is None else list(found[n]) for n in names]

    def multi_get(self, keys: Sequence[Sequence[Any]]) -> list[Any]:
        """The current value of each key (None when absent)."""
        return [None if doc is None else doc[2] for doc in self._docs(keys)]

    def get_transactional(self, key: Sequence[Any]) -> TransactionalValue | None:
        doc = self._docs([key])[0]
        return None if doc is None else TransactionalValue(doc[0], doc[2])

    def get_opaque(self, key: Sequence[Any]) -> OpaqueValue | None:
        doc = self._docs([key])[0]
        return None if doc is None else OpaqueValue(doc[0], doc[1], doc[2])

    def _txid(self) -> int:
        if self.txid is None:
            raise RuntimeError("map state written outside a commit (begin_commit not called)")
        return self.txid

    def multi_update(self, keys: Sequence[Sequence[Any]],
                     updaters: Sequence[Callable[[Any], Any]]) -> list[Any]:
        """Apply ``updaters[i](stored value or None)`` to each key the way of the state's kind
        (see the module doc) in one write; returns the new values."""
        txid = self._txid()
        writes: dict[str, list[Any]] = {}
        values = []
        for key, doc, fn in zip(keys, self._docs(keys), updaters, strict=True):
            if self.kind == NON_TRANSACTIONAL:
                new = [txid, None, fn(None if doc is None else doc[2])]
            elif self.kind == TRANSACTIONAL:
                if doc is not None and doc[0] == txid:
                    values.append(doc[2])
                    continue
                new = [txid, None, fn(None if doc is None else doc[2])]
            else:
                old = OpaqueValue(*doc) if doc is not None else OpaqueValue(0, None, None)
                nxt = old.next(txid, fn)
                new = [nxt.txid, nxt.previous, nxt.current]
            writes[encode_key(key)] = new
            values.append(new[2])
        if writes:
            self.store.put_many(writes)
        return values

    def multi_put(self, keys: Sequence[Sequence[Any]], values: Sequence[Any]) -> None:
        """Set each key (for opaque state the stored value becomes ``previous`` unless this batch
        wrote it already)."""
        fns = [lambda _old, v=v: v for v in values]
        self.multi_update(keys, fns)

    def items(self) -> Iterator[tuple[list[Any], Any]]:
        """Every ``(key, current value)``."""
        for name, doc in self.store.scan():  # streamed from the store
            if doc is not None:
                yield decode_key(name), doc[2]

    def close(self) -> None:
        self.store.close()


class StateFactory:
    """Where and how a Trident state is kept (Storm's ``StateFactory``); ``name`` identifies it:
    a persisting stream and a ``state_query`` reading it share it through their factory.

    * ``StateFactory.memory(name, kind)``: the LocalCluster's (or worker process's) memory —
      Storm's ``MemoryMapState.Factory``; lost with it;
    * ``StateFactory.default(name, kind)``: the topology's state backend (ZooKeeper on a cluster,
      the LocalCluster's memory locally);
    * ``StateFactory.sqlite(path, name, kind, table=)``: a SQLite file;
    * ``StateFactory.zookeeper(name, kind, servers=, root=)``: ZooKeeper (``storm.zookeeper.*``
      by default) at ``<root>/<name>`` (root ``/stormpy/trident``);
    * ``StateFactory.redis(name, kind, config=)``: Redis (Storm's ``RedisMapState``), one hash
      ``<keyPrefix>/<name>`` with one field per key; ``config`` in the shape of
      ``topology.state.provider.config`` for ``redis`` (None: the topology's own);
    * ``StateFactory.parquet(path)``: a Parquet table written once per committed batch (for
      ``partition_persist`` with ``ParquetWrite``).

    Other states (backend ``external``) subclass it: they override ``doc()`` (adding their
    fields and ``"factory": "<module>:<class>"``), ``from_doc()`` and ``make_state()``; the
    returned state has ``begin_commit(txid)``, ``commit(txid)`` and ``close()``; a state whose
    commit blocks on a remote system also has ``commit_later(txid)``, returning that commit as a
    callable, which the bolt runs off the executor loop (instead of ``commit``).
    """

    def __init__(self, backend: str, name: str, kind: str = TRANSACTIONAL, *,
                 path: str | None = None, table: str = "trident_state",
                 servers: str | None = None, root: str | None = None,
                 config: Mapping[str, Any] | None = None) -> None:
        if backend not in BACKENDS:
            raise SettingError("trident state backend", f"{backend!r} is not one of "
                                                         f"{', '.join(BACKENDS)}")
        if kind not in KINDS:
            raise SettingError("trident state kind", f"{kind!r} is not one of {', '.join(KINDS)}")
        if not isinstance(name, str) or not name:
            raise SettingError("trident state name", f"a non-empty string, got {name!r}")
        if backend in ("sqlite", "parquet") and not path:
            raise SettingError("trident state path", f"a {backend} state needs its path")
        self.backend, self.name, self.kind = backend, name, kind
        self.path, self.table, self.servers, self.root = path, table, servers, root
        self.config = dict(config) if config is not None else None
        if backend == "redis" and self.config is not None:
            redis_config(self.config, "trident state config")

    @classmethod
    def memory(cls, name: str, kind: str = TRANSACTIONAL) -> StateFactory:
        return cls("memory", name, kind)

    @classmethod
    def default(cls, name: str, kind: str = TRANSACTIONAL) -> StateFactory:
        return cls("default", name, kind)

    @classmethod
    def sqlite(cls, path: str, name: str = "state", kind: str = TRANSACTIONAL,
               table: str = "trident_state") -> StateFactory:
        return cls("sqlite", name, kind, path=str(path), table=table)

    @classmethod
    def parquet(cls, path: str, name: str = "parquet") -> StateFactory:
        """Each committed batch's tuples into a Parquet table at ``path`` once (with
        ``partition_persist(..., ParquetWrite())``; see :mod:`stormpy.trident._parquet`)."""
        return cls("parquet", name, TRANSACTIONAL, path=str(path))

    @classmethod
    def zookeeper(cls, name: str, kind: str = TRANSACTIONAL, servers: str | None = None,
                  root: str | None = None) -> StateFactory:
        return cls("zookeeper", name, kind, servers=servers, root=root)

    @classmethod
    def redis(cls, name: str, kind: str = TRANSACTIONAL,
              config: Mapping[str, Any] | None = None) -> StateFactory:
        return cls("redis", name, kind, config=config)

    def doc(self) -> dict[str, Any]:
        return {"backend": self.backend, "name": self.name, "kind": self.kind, "path": self.path,
                "table": self.table, "servers": self.servers, "root": self.root,
                "config": self.config}

    @classmethod
    def from_doc(cls, doc: Mapping[str, Any]) -> StateFactory:
        if doc.get("factory") and cls is StateFactory:
            sub = import_object(doc["factory"])
            if not (isinstance(sub, type) and issubclass(sub, StateFactory)):
                raise SettingError("trident state factory", f"{doc['factory']!r} is not a "
                                                            "StateFactory subclass")
            return sub.from_doc(doc)
        return cls(doc["backend"], doc["name"], doc["kind"], path=doc.get("path"),
                   table=doc.get("table") or "trident_state", servers=doc.get("servers"),
                   root=doc.get("root"), config=doc.get("config"))

    @property
    def key(self) -> tuple[Any, ...]:
        """Identity of the state (two factories with the same key are the same state)."""
        config = None if self.config is None else repr(sorted(self.config.items()))
        return (self.backend, self.name, self.path, self.table, self.servers, self.root, config)

    def open_store(self, conf: Mapping[str, Any], context: Any) -> Store:
        if self.backend == "memory":
            store = context.state_backend.memory.named_store("transactional", "trident", self.name)
        elif self.backend == "default":
            store = context.state_backend.named_store("transactional", "trident", self.name)
        elif self.backend == "sqlite":
            assert self.path is not None
            store = SqliteStore(self.path, self.table, segments=(self.name,))
        elif self.backend == "redis":
            config = self.config
            if config is None:
                config = state_settings(conf).config  # the topology's provider config
            store = open_redis_store(redis_config(config, "trident state config"), self.name)
        else:
            root = (self.root or "/stormpy/trident").rstrip("/") or "/"
            hosts = hosts_from_config(conf, servers=self.servers)
            store = open_zk_store(hosts, root, f"{root.rstrip('/')}/{encode_segment(self.name)}")
        if not isinstance(store, Store):
            raise SettingError("trident state backend", f"{self.backend}: the runtime's store "
                                                         "is not one of the state layer's")
        return store

    def make_state(self, conf: Mapping[str, Any], context: Any) -> Any:
        """The task's state: a MapState, or for ``parquet`` a ParquetState."""
        if self.backend == "parquet":
            assert self.path is not None
            return ParquetState(self.path, context.task_index)
        return MapState(self.open_store(conf, context), self.kind)


def read_state(factory: StateFactory,
               conf: Mapping[str, Any] | None = None) -> dict[tuple[Any, ...], Any]:
    """The current value of every key of the map state ``factory`` names, as plain Python:
    ``{group key as a tuple: value}`` (``()`` is the key of an ungrouped aggregate), e.g.
    ``read_state(StateFactory.sqlite("trident-wordcount.sqlite", "counts"))`` →
    ``{("the",): 1000, ...}``. For SQLite and ZooKeeper states (``conf`` gives
    ``storm.zookeeper.*`` when the factory names no servers); memory and default states live in a
    running cluster, Parquet ones are read with pyarrow: a SettingError names the backend. A
    SQLite file that does not exist is a SettingError too (a typo must not create an empty one)."""
    if factory.backend not in ("sqlite", "zookeeper"):
        raise SettingError("trident state backend",
                           f"read_state reads sqlite and zookeeper states, not {factory.backend!r} "
                           "(memory/default states live in the running cluster; read Parquet "
                           "with pyarrow)")
    if factory.backend == "sqlite" and not os.path.isfile(str(factory.path)):
        raise SettingError("trident state path", f"no SQLite file {factory.path!r}")
    store = factory.open_store(conf or {}, None)
    try:
        return {tuple(key): value for key, value in MapState(store, factory.kind).items()}
    finally:
        store.close()


class QueryFunction(Operation):
    """``state_query``: ``batch_retrieve(state, tuples)`` → one result per tuple, then
    ``execute(tuple, result, collector)`` emits the output fields for each."""

    def batch_retrieve(self, state: MapState, tuples: list[TridentTuple]) -> list[Any]:
        raise NotImplementedError

    def execute(self, tuple_: TridentTuple, result: Any, collector: TridentCollector) -> None:
        raise NotImplementedError


class MapGet(QueryFunction):
    """The map's value for the key made of the tuple's input fields (None when absent)."""

    def batch_retrieve(self, state: MapState, tuples: list[TridentTuple]) -> list[Any]:
        return state.multi_get([list(t) for t in tuples])

    def execute(self, tuple_: TridentTuple, result: Any, collector: TridentCollector) -> None:
        collector.emit([result])


class TupleCollectionGet(QueryFunction):
    """Every entry of the map, as ``[*key, value]`` (for each query tuple)."""

    def batch_retrieve(self, state: MapState, tuples: list[TridentTuple]) -> list[Any]:
        entries = sorted(state.items(), key=lambda kv: msgpack.packb(kv[0]))
        return [entries for _ in tuples]

    def execute(self, tuple_: TridentTuple, result: Any, collector: TridentCollector) -> None:
        for key, value in result:
            collector.emit([*key, value])


class StateUpdater(Operation):
    """``partition_persist``: ``update_state(state, tuples, collector)`` in the commit phase of
    each batch (the tuples this partition received); emits go to ``new_values_stream()``."""

    def update_state(self, state: MapState, tuples: list[TridentTuple],
                     collector: TridentCollector) -> None:
        raise NotImplementedError


class MapPutUpdater(StateUpdater):
    """Puts ``value`` (the last input field) under the key of the other input fields."""

    def update_state(self, state: MapState, tuples: list[TridentTuple],
                     collector: TridentCollector) -> None:
        keys = [list(t)[:-1] for t in tuples]
        state.multi_put(keys, [t[-1] for t in tuples])
        for t in tuples:
            collector.emit(list(t))


class ParquetWrite(StateUpdater):
    """``partition_persist(StateFactory.parquet(path), fields, ParquetWrite(), ["rows"])``:
    writes the partition's tuples of each committed batch (columns: the input fields) once and
    emits ``[rows written]`` (0 when the txid was written before: a replayed commit)."""

    def update_state(self, state: Any, tuples: list[TridentTuple],
                     collector: TridentCollector) -> None:
        if not isinstance(state, ParquetState):
            raise TypeError("ParquetWrite needs a StateFactory.parquet state")
        columns = list(tuples[0].fields) if tuples else []
        written = state.write([list(t) for t in tuples], columns) if tuples else False
        collector.emit([len(tuples) if written else 0])
