"""KeyValueState: a stateful bolt's map (Storm's ``KeyValueState``), checkpointed through a
:class:`~stormpy.state.base.Store` of the state layer with Storm's prepare / commit / rollback steps.

Layout in the store (one store per task): ``meta`` → ``{"committed": txid}``; ``d.<key>`` → value
(the committed map, key encoded); ``p.<txid>`` → the changes prepared for ``txid``
(``[[key, present, value], ...]``). ``prepare_commit`` writes ``p.<txid>`` (one atomic write);
``commit`` writes ``meta`` (the commit point, one atomic write), then folds the changes into the
``d.`` rows and drops ``p.<txid>``. Loading folds any ``p.<t>`` with ``t`` at or below the
committed txid (a commit interrupted after its commit point) and deletes later ones: their inputs
were held by the task that prepared them and are acked only after the commit point, so after a
restart they are never acked and the spout replays them; committing their prepared effect as
well would count them twice. Every step is idempotent, so a crash anywhere is repaired by
replaying the checkpoint protocol.

The whole map lives in the task's memory (reads never touch the store); the store holds it
durably. Keys are hashable msgpack scalars (str, int, bytes, float, bool, None); values are
msgpack data.
"""

from __future__ import annotations

import base64
from collections.abc import Iterator
from typing import Any

import msgpack

from stormpy.state.base import Store
from stormpy.topology.state import CorruptStateError, StateValueError

__all__ = ["KeyValueState"]

_DELETED = object()
_MISSING = object()
_KEY_TYPES = (str, int, bytes, float, bool, type(None))


def _enc(key: Any) -> str:
    return "d." + base64.urlsafe_b64encode(msgpack.packb(key)).decode()


def _dec(name: str) -> Any:
    return msgpack.unpackb(base64.urlsafe_b64decode(name[2:]), raw=False, strict_map_key=False)


class KeyValueState:
    """``put``, ``get``, ``delete``, ``len``, ``in`` and iteration over ``(key, value)`` pairs, as
    seen by the bolt (committed + prepared + uncommitted changes). The executor drives
    ``prepare_commit``/``commit``/``rollback``; users do not."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._committed: dict[Any, Any] = {}
        self._prepared: dict[Any, Any] = {}
        self._prepared_txid: int | None = None
        self._pending: dict[Any, Any] = {}
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
            value = self._prepared.get(key, _MISSING) if self._prepared else _MISSING
            if value is _MISSING:
                return self._committed.get(key, default)
        return default if value is _DELETED else value

    def delete(self, key: Any) -> Any:
        """Remove ``key``; returns its value (or None)."""
        old = self.get(key)
        self._pending[key] = _DELETED
        return old

    def __contains__(self, key: Any) -> bool:
        return self.get(key, _DELETED) is not _DELETED

    def items(self) -> Iterator[tuple[Any, Any]]:
        merged = dict(self._committed)
        merged.update(self._prepared)
        merged.update(self._pending)
        return ((k, v) for k, v in merged.items() if v is not _DELETED)

    def keys(self) -> Iterator[Any]:
        return (k for k, _ in self.items())

    def __iter__(self) -> Iterator[tuple[Any, Any]]:
        return self.items()

    def __len__(self) -> int:
        return sum(1 for _ in self.items())

    # -- checkpointing ---------------------------------------------------------------------------
    def load(self) -> None:
        """Read the committed map back from the store (StateStoreError naming store and key when
        it is unreachable or corrupt)."""
        meta = self.store.get("meta") or {}
        if not isinstance(meta, dict) or not isinstance(meta.get("committed", 0), int):
            raise CorruptStateError(f"{self.store.location} key 'meta'",
                                    f"not a state meta document: {meta!r}")
        self.committed_txid = int(meta.get("committed", 0))
        names = self.store.names()
        prepared = sorted(int(n[2:]) for n in names if n.startswith("p.") and n[2:].isdigit())
        for txid in prepared:
            if txid <= self.committed_txid:
                self._fold(txid, self._read_changes(txid))
        # prepared by a task that has since stopped, before its commit point: see the module doc
        self.store.delete_many([f"p.{t}" for t in prepared if t > self.committed_txid])
        committed: dict[Any, Any] = {}
        for name in self.store.names():
            if name.startswith("d."):
                try:
                    key = _dec(name)
                except Exception as exc:  # noqa: BLE001 - any decoding failure: corrupt key
                    raise CorruptStateError(f"{self.store.location} key {name!r}",
                                            f"not a state key ({exc})") from None
                committed[key] = self.store.get(name)
        self._committed = committed
        self._prepared, self._prepared_txid, self._pending = {}, None, {}

    def _read_changes(self, txid: int) -> dict[Any, Any]:
        doc = self.store.get(f"p.{txid}")
        try:
            return {k: (v if present else _DELETED) for k, present, v in (doc or [])}
        except (TypeError, ValueError):
            raise CorruptStateError(f"{self.store.location} key 'p.{txid}'",
                                    "not a list of [key, present, value]") from None

    def _fold(self, txid: int, changes: dict[Any, Any]) -> None:
        """Apply committed ``changes`` to the ``d.`` rows and drop ``p.<txid>`` (idempotent)."""
        self.store.put_many({_enc(k): v for k, v in changes.items() if v is not _DELETED})
        self.store.delete_many([_enc(k) for k, v in changes.items() if v is _DELETED])
        self.store.delete(f"p.{txid}")

    def prepare_commit(self, txid: int) -> None:
        """Make the changes so far durable as ``txid``'s, not yet visible after a restart."""
        if self._prepared_txid is not None and self._prepared_txid != txid:
            raise RuntimeError(f"{self.store.location}: prepare {txid} while {self._prepared_txid} "
                               "is prepared and not committed")
        self._prepared.update(self._pending)
        self._pending = {}
        doc = [[k, v is not _DELETED, None if v is _DELETED else v]
               for k, v in self._prepared.items()]
        self.store.put(f"p.{txid}", doc)
        self._prepared_txid = txid

    def commit(self, txid: int) -> bool:
        """Commit ``txid``'s prepared changes; True when something was committed (False: already
        committed, or nothing prepared for it by this instance, e.g. a task restarted after
        preparing ``txid``, whose inputs are replayed)."""
        if txid <= self.committed_txid or self._prepared_txid != txid:
            return False
        changes = self._prepared
        self.store.put("meta", {"committed": txid})
        self.committed_txid = txid
        self._fold(txid, changes)
        for key, value in changes.items():
            if value is _DELETED:
                self._committed.pop(key, None)
            else:
                self._committed[key] = value
        self._prepared, self._prepared_txid = {}, None
        return True

    def rollback(self) -> None:
        """Forget every change not committed (in memory and prepared in the store)."""
        if self._prepared_txid is not None:
            self.store.delete(f"p.{self._prepared_txid}")
        self._prepared, self._prepared_txid, self._pending = {}, None, {}
