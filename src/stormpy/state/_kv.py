"""KeyValueState: a stateful bolt's map (Storm's ``KeyValueState``), checkpointed through a
:class:`~stormpy.state._base.Store` of the state layer with Storm's prepare / commit / rollback steps.

Layout in the store (one store per task): ``meta`` → ``{"committed": txid}``; ``d.<key>`` → value
(the committed map, key encoded); ``p.<txid>`` → the changes prepared for ``txid``: its value is
the header ``{"chunks": n, "changes": m}`` and its children ``0`` … ``n-1`` the chunks, each at
most :data:`CHUNK_BYTES` of msgpack ``[key, present, value]`` entries (so no checkpoint is bound
by one document's size: ZooKeeper's znode limit, a Redis value). ``prepare_commit`` writes the
header and then the chunks (one ``put_many``: atomic on memory, SQLite and Redis, in order on
ZooKeeper, so a prepare cut short there is still found by its header); ``commit`` writes
``meta`` (the commit point, one atomic write), then folds the changes into the ``d.`` rows
(``write_batch`` in slices of :data:`FOLD_BATCH`) and drops ``p.<txid>``. Loading folds any
``p.<t>`` with ``t`` at or below the committed txid (a
commit interrupted after its commit point) and deletes later ones: their inputs were held by the
task that prepared them and are acked only after the commit point, so after a restart they are
never acked and the spout replays them; committing their prepared effect as well would count
them twice. Every step is idempotent, so a crash anywhere is repaired by replaying the checkpoint
protocol. A ``p.<t>`` written by earlier releases (one list document) is still read.

Reads go through to the store: the map is NOT held in memory. Committed values read are kept in
a bounded LRU cache (``cache_max_keys``, the setting ``topology.state.cache.max.keys``), so a task
can hold far more keys than its worker's memory; the changes since the last commit (pending and
prepared) are held in memory until committed. Iteration and ``len`` stream the committed map
from the store (``Store.scan``) merged with those changes. A commit whose fold fails after its
commit point (the store went away) still counts as committed: its changes stay visible from
memory and the fold is retried first by the next prepare (or by loading).

Keys are hashable msgpack scalars (str, int, bytes, float, bool, None); values are msgpack data.
"""

from __future__ import annotations

import base64
import binascii
import logging
from collections import OrderedDict
from collections.abc import Iterator
from typing import Any

import msgpack

from stormpy.state._base import Store, encode_packed
from stormpy.topology._state import CorruptStateError, StateStoreError, StateValueError

__all__ = ["CHUNK_BYTES", "DEFAULT_CACHE_MAX_KEYS", "FOLD_BATCH", "KeyValueState"]

log = logging.getLogger("stormpy.state")

#: the largest chunk of a prepared checkpoint (bytes of packed entries; one larger entry is a
#: chunk of its own), well under ZooKeeper's default znode limit
CHUNK_BYTES = 256 * 1024
#: how many keys one ``write_batch`` of a fold carries
FOLD_BATCH = 10_000
#: committed values a state keeps in memory when its settings name no bound
DEFAULT_CACHE_MAX_KEYS = 100_000

_DELETED = object()
_MISSING = object()
_KEY_TYPES = (str, int, bytes, float, bool, type(None))


_URLSAFE = bytes.maketrans(b"+/", b"-_")
_DELETED_TAIL = b"\xc2\xc0"  # a deletion's entry after its key: false, nil


def _enc(key: Any) -> str:
    return _enc_packed(msgpack.packb(key))


def _enc_packed(packed_key: bytes) -> str:
    """The ``d.`` row name of the key packed as ``packed_key`` (base64url of its msgpack)."""
    return "d." + binascii.b2a_base64(packed_key, newline=False).translate(_URLSAFE).decode()


def _dec(name: str) -> Any:
    return msgpack.unpackb(base64.urlsafe_b64decode(name[2:]), raw=False, strict_map_key=False)


class _Encoded:
    """A checkpoint's changes packed once: the chunks of ``p.<txid>`` (packed ``[key, present,
    value]`` entries, at most ``limit`` bytes each; an entry larger than ``limit`` alone) and
    the ``d.`` rows the fold writes (name and state document, from the same packed bytes) and
    deletes."""

    __slots__ = ("chunks", "deletes", "puts")

    def __init__(self, location: str, changes: dict[Any, Any], limit: int) -> None:
        packb = msgpack.Packer(use_bin_type=True).pack
        self.chunks: list[bytes] = []
        self.puts: list[tuple[str, bytes]] = []
        self.deletes: list[str] = []
        parts: list[bytes] = []
        size = 0
        for key, value in changes.items():
            pk = packb(key)
            name = _enc_packed(pk)
            if value is _DELETED:
                entry = b"\x93" + pk + _DELETED_TAIL
                self.deletes.append(name)
            else:
                try:
                    pv = packb(value)
                except (TypeError, ValueError, OverflowError) as exc:
                    raise StateValueError(f"{location} key {key!r}", "value must be "
                                          f"msgpack-serialisable plain data: {exc}") from None
                entry = b"\x93" + pk + b"\xc3" + pv
                self.puts.append((name, encode_packed(f"{location} key {key!r}", pv)))
            if parts and size + len(entry) > limit:
                self.chunks.append(b"".join(parts))
                parts, size = [], 0
            parts.append(entry)
            size += len(entry)
        if parts:
            self.chunks.append(b"".join(parts))


class KeyValueState:
    """``put``, ``get``, ``delete``, ``len``, ``in`` and iteration over ``(key, value)`` pairs, as
    seen by the bolt (committed + prepared + uncommitted changes). The executor drives
    ``prepare_commit``/``commit``/``rollback``; users do not. ``cache_max_keys`` bounds the
    committed values kept in memory (see the module doc); ``chunk_bytes`` the chunks of a
    prepared checkpoint."""

    def __init__(self, store: Store, cache_max_keys: int = DEFAULT_CACHE_MAX_KEYS, *,
                 chunk_bytes: int = CHUNK_BYTES) -> None:
        if cache_max_keys < 0:
            raise ValueError(f"cache_max_keys must be >= 0, got {cache_max_keys}")
        self.store = store
        self.cache_max_keys = cache_max_keys
        self.chunk_bytes = chunk_bytes
        #: committed values read or written lately (_DELETED: known to be absent), LRU order
        self._cache: OrderedDict[Any, Any] = OrderedDict()
        self._prepared: dict[Any, Any] = {}
        self._prepared_txid: int | None = None
        #: the prepared changes packed (chunks written by the prepare, rows for the fold)
        self._prepared_rows: _Encoded | None = None
        self._pending: dict[Any, Any] = {}
        #: committed changes whose fold into the ``d.`` rows is still to be done
        self._unfolded: dict[Any, Any] = {}
        self._unfolded_txid: int | None = None
        self._unfolded_rows: _Encoded | None = None
        self.committed_txid = 0
        self.load()

    # -- the user's map --------------------------------------------------------------------------
    def put(self, key: Any, value: Any) -> None:
        if not isinstance(key, _KEY_TYPES):
            raise StateValueError(f"{self.store.location} key {key!r}",
                                  "state keys are str, int, bytes, float, bool or None")
        self._pending[key] = value

    def get(self, key: Any, default: Any = None) -> Any:
        value = self._pending.get(key, _MISSING)
        if value is _MISSING:
            if self._prepared:
                value = self._prepared.get(key, _MISSING)
            if value is _MISSING and self._unfolded:
                value = self._unfolded.get(key, _MISSING)
            if value is _MISSING:
                value = self._committed(key)
        return default if value is _DELETED else value

    def _committed(self, key: Any) -> Any:
        """The committed value of ``key`` (_DELETED when it has none): from the cache, else read
        through from the store and cached."""
        cache = self._cache
        value = cache.get(key, _MISSING)
        if value is not _MISSING:
            cache.move_to_end(key)
            return value
        value = self.store.get(_enc(key), _DELETED)
        self._remember(key, value)
        return value

    def _remember(self, key: Any, value: Any) -> None:
        if self.cache_max_keys:
            cache = self._cache
            cache[key] = value
            cache.move_to_end(key)
            while len(cache) > self.cache_max_keys:
                cache.popitem(last=False)

    def delete(self, key: Any) -> Any:
        """Remove ``key``; returns its value (or None)."""
        old = self.get(key)
        self._pending[key] = _DELETED
        return old

    def __contains__(self, key: Any) -> bool:
        return self.get(key, _DELETED) is not _DELETED

    def items(self) -> Iterator[tuple[Any, Any]]:
        """Every ``(key, value)``: the committed map streamed from the store, with the changes
        not yet committed (as they are when the iteration starts) in place."""
        changes = dict(self._unfolded)
        changes.update(self._prepared)
        changes.update(self._pending)
        return self._items(changes)

    def _items(self, changes: dict[Any, Any]) -> Iterator[tuple[Any, Any]]:
        for name, value in self.store.scan("", prefix="d."):
            try:
                key = _dec(name)
            except Exception as exc:  # noqa: BLE001 - any decoding failure: corrupt key
                raise CorruptStateError(f"{self.store.location} key {name!r}",
                                        f"not a state key ({exc})") from None
            if key not in changes:
                yield key, value
        for key, value in changes.items():
            if value is not _DELETED:
                yield key, value

    def keys(self) -> Iterator[Any]:
        return (k for k, _ in self.items())

    def __iter__(self) -> Iterator[tuple[Any, Any]]:
        return self.items()

    def __len__(self) -> int:
        return sum(1 for _ in self.items())

    # -- checkpointing ---------------------------------------------------------------------------
    def load(self) -> None:
        """Forget what is in memory and repair the store after a restart (see the module doc);
        StateStoreError naming store and key when it is unreachable or corrupt."""
        meta = self.store.get("meta") or {}
        if not isinstance(meta, dict) or not isinstance(meta.get("committed", 0), int):
            raise CorruptStateError(f"{self.store.location} key 'meta'",
                                    f"not a state meta document: {meta!r}")
        self._prepared, self._prepared_txid, self._pending = {}, None, {}
        self._prepared_rows = self._unfolded_rows = None
        self._unfolded, self._unfolded_txid = {}, None
        self._cache.clear()
        self.committed_txid = int(meta.get("committed", 0))
        headers = {int(name[2:]): doc for name, doc in self.store.scan("", prefix="p.")
                   if name[2:].isdigit()}
        for txid in sorted(headers):
            if txid <= self.committed_txid:
                self._fold_stored(txid, headers[txid])
        # prepared by a task that has since stopped, before its commit point: see the module doc
        self.store.delete_many([f"p.{t}" for t in sorted(headers) if t > self.committed_txid])

    def _fold_stored(self, txid: int, header: Any) -> None:
        """Fold the stored changes of committed ``txid`` into the ``d.`` rows, chunk by chunk,
        then drop them (idempotent)."""
        name = f"p.{txid}"
        if isinstance(header, list):  # one document, as earlier releases wrote it
            self._fold(self._entries(name, header))
        else:
            if not (isinstance(header, dict) and isinstance(header.get("chunks"), int)):
                raise CorruptStateError(f"{self.store.location} key {name!r}",
                                        f"not a prepared checkpoint header: {header!r}")
            for index in range(header["chunks"]):
                chunk = self.store.get(f"{name}/{index}")
                if chunk is None:
                    # chunks are written before the commit point and dropped only after the
                    # whole fold (children first, on ZooKeeper): this fold was done
                    break
                self._fold(self._unpack(f"{name}/{index}", chunk))
        self.store.delete(name)

    def _entries(self, name: str, doc: Any) -> dict[Any, Any]:
        try:
            return {k: (v if present else _DELETED) for k, present, v in doc}
        except (TypeError, ValueError):
            raise CorruptStateError(f"{self.store.location} key {name!r}",
                                    "not a list of [key, present, value]") from None

    def _unpack(self, name: str, chunk: Any) -> dict[Any, Any]:
        if not isinstance(chunk, bytes):
            raise CorruptStateError(f"{self.store.location} key {name!r}",
                                    "not a chunk of packed [key, present, value] entries")
        try:
            entries = _unpack_all(chunk)
        except (ValueError, msgpack.UnpackException) as exc:
            raise CorruptStateError(f"{self.store.location} key {name!r}",
                                    f"not a chunk of packed entries ({str(exc) or type(exc).__name__})"
                                    ) from None
        return self._entries(name, entries)

    def _fold(self, changes: dict[Any, Any], rows: _Encoded | None = None) -> None:
        """Write committed ``changes`` (packed as ``rows`` when given) into the ``d.`` rows
        (idempotent), in slices of :data:`FOLD_BATCH` keys."""
        if rows is None:
            rows = _Encoded(self.store.location, changes, self.chunk_bytes)
        for start in range(0, len(rows.puts), FOLD_BATCH):
            self.store.write_encoded(rows.puts[start:start + FOLD_BATCH])
        for start in range(0, len(rows.deletes), FOLD_BATCH):
            self.store.write_encoded((), rows.deletes[start:start + FOLD_BATCH])

    def _finish_fold(self) -> None:
        """Fold the changes of a commit whose fold has not been done yet, then drop its
        ``p.<txid>``; the cache learns the committed values."""
        if self._unfolded_txid is None:
            return
        self._fold(self._unfolded, self._unfolded_rows)
        self.store.delete(f"p.{self._unfolded_txid}")
        cache = self._cache
        if cache:
            for key, value in self._unfolded.items():
                if key in cache:
                    cache[key] = value
        self._unfolded, self._unfolded_txid, self._unfolded_rows = {}, None, None

    def prepare_commit(self, txid: int) -> None:
        """Make the changes so far durable as ``txid``'s, not yet visible after a restart."""
        if self._prepared_txid is not None and self._prepared_txid != txid:
            raise RuntimeError(f"{self.store.location}: prepare {txid} while {self._prepared_txid} "
                               "is prepared and not committed")
        self._finish_fold()
        self._prepared.update(self._pending)
        self._pending = {}
        # packed once: the chunks written now are the rows the commit's fold writes
        rows = _Encoded(self.store.location, self._prepared, self.chunk_bytes)
        # the header first: where put_many is not atomic (ZooKeeper) a prepare cut short is
        # still found by its header, and deleted, at the next load
        writes: dict[str, Any] = {f"p.{txid}": {"chunks": len(rows.chunks),
                                                "changes": len(self._prepared)}}
        writes.update((f"p.{txid}/{i}", chunk) for i, chunk in enumerate(rows.chunks))
        rows.chunks = []
        self.store.put_many(writes)
        self._prepared_txid, self._prepared_rows = txid, rows

    def commit(self, txid: int, *, fold: bool = True) -> bool:
        """Commit ``txid``'s prepared changes; True when something was committed (False: already
        committed, or nothing prepared for it by this instance, e.g. a task restarted after
        preparing ``txid``, whose inputs are replayed). A failure writing the commit point
        raises (nothing committed); a failure folding after it is logged and retried later.
        ``fold=False`` writes the commit point only (the caller acks the inputs at once, then
        calls :meth:`fold`)."""
        if txid <= self.committed_txid or self._prepared_txid != txid:
            return False
        self.store.put("meta", {"committed": txid})
        self.committed_txid = txid
        self._unfolded, self._unfolded_txid = self._prepared, txid
        self._unfolded_rows = self._prepared_rows
        self._prepared, self._prepared_txid, self._prepared_rows = {}, None, None
        if fold:
            self.fold()
        return True

    def fold(self) -> None:
        """Fold the last commit's changes into the committed map now (a failure is logged; the
        next prepare, or loading, retries it)."""
        txid = self._unfolded_txid
        try:
            self._finish_fold()
        except StateStoreError as exc:
            log.warning("%s: checkpoint %s is committed; folding its changes failed (%s): "
                        "retried at the next checkpoint", self.store.location, txid, exc)

    def discard_pending(self) -> None:
        """Forget the changes made since the last prepare (the prepared ones stay): what an input
        that failed midway may have changed is not committed with the others."""
        self._pending = {}

    def rollback(self) -> None:
        """Forget every change not committed (in memory and prepared in the store; a prepared
        document that cannot be deleted now is dropped by the next load, or overwritten by the
        next prepare of its txid)."""
        txid = self._prepared_txid
        self._prepared, self._prepared_txid, self._pending = {}, None, {}
        self._prepared_rows = None
        if txid is not None:
            try:
                self.store.delete(f"p.{txid}")
            except StateStoreError as exc:
                log.warning("%s: rollback could not delete p.%d now (%s)", self.store.location,
                            txid, exc)


def _unpack_all(chunk: bytes) -> list[Any]:
    """The msgpack objects ``chunk`` holds, in order; ValueError when it ends inside one (a
    chunk cut short: reading the whole entries only would lose the rest without a word)."""
    unpacker = msgpack.Unpacker(raw=False, strict_map_key=False, max_buffer_size=len(chunk) + 1)
    unpacker.feed(chunk)
    entries = list(unpacker)
    try:  # the iteration stops at the end of the bytes or inside an entry they cut short
        rest = unpacker.read_bytes(1)
    except ValueError:  # msgpack: "an object is incomplete"
        rest = b"?"
    if rest:
        raise ValueError(f"cut short inside the entry after {len(entries)} whole one(s)")
    return entries
