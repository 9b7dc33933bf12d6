"""The state layer's Redis backend (``topology.state.provider: redis``, or Storm's class name
``org.apache.storm.redis.state.RedisKeyValueStateProvider``), on redis-py with hiredis.

Layout: a node's children are the fields of one Redis hash. The hash of the node at segments
``s1/.../sn`` is the Redis key ``<prefix>/<s1>/.../<sn>`` (each segment percent-encoded by
:func:`~stormpy.cluster.paths.encode_segment`, so it holds no ``/``); a node's value is the field
named by its last segment in its parent's hash (a state document of
:func:`~stormpy.topology._state.encode_state`; an empty field marks a node that has children but no
value of its own, as a parent znode does). A stateful task's map is therefore one hash (Storm's
``RedisKeyValueState`` keeps one hash per namespace too), streamed with ``HSCAN`` and counted with
``HLEN``.

Commands are batched: ``put_many``/``delete_many``/``update`` are one ``MULTI``/``EXEC`` each
(atomic), ``get_many`` one pipeline, ``write_batch`` one ordered pipeline of multi-field
``HSET``s sent :data:`PIPELINE_BATCH` keys at a time (not atomic; a connection lost midway leaves a prefix
applied, which the caller's protocol repairs). A recursive delete is one server-side script
(descendants' hashes removed with their node). ``update`` is compare-and-set with ``WATCH`` on
the parent hash. ``watch`` polls: Redis has no watch of a hash field that survives a lost
connection, so a watched key is read every :data:`WATCH_POLL_SECS` on a thread of the watch's
own (:class:`~stormpy.host.service.Service`) and the callback runs on that thread when the value
read differs from the last one it was given; a read that fails is logged and tried again at the
next poll (a change is seen within about one poll period of Redis answering).

Errors: Redis unreachable, timing out, loading, refusing the password or out of memory (``OOM``
under ``maxmemory``) raise :class:`~stormpy.topology._state.StateUnavailableError`, any other Redis
error :class:`~stormpy.topology._state.StateStoreError`, both naming the store (``redis
host:port db N at prefix/...``) and the key. Redis Cluster is not supported (the recursive delete
touches keys the script does not declare).
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, TypeVar

from stormpy.cluster.paths import decode_segment, encode_segment
from stormpy.config import SettingError
from stormpy.config.state import (
    DEFAULT_PREFIX,
    DEFAULT_TIMEOUT_MS,
    REDIS_CONFIG_ENTRIES,
    RedisConfig,
    redis_config,
)
from stormpy.host.service import Service
from stormpy.state._base import (
    MAX_UPDATE_ROUNDS,
    Store,
    check_segments,
    root_or_segments,
    update_rounds,
)
from stormpy.topology._state import (
    StateKeyError,
    StateStoreError,
    StateUnavailableError,
    decode_state,
    encode_state,
)

__all__ = ["DEFAULT_PREFIX", "DEFAULT_TIMEOUT_MS", "PIPELINE_BATCH", "REDIS_CONFIG_ENTRIES",
           "WATCH_POLL_SECS", "RedisConfig", "RedisStore", "open_redis_store", "redis_config"]

T = TypeVar("T")

#: a segment whose percent-encoding (encode_segment) only turns "=" into "%3D"
_PLAIN = re.compile(r"[A-Za-z0-9_.~=-]+")

#: how many keys ``write_batch`` sends per round trip
PIPELINE_BATCH = 10_000
#: how many fields one ``HSET`` of ``write_batch`` sets
HSET_FIELDS = 500
#: how often a command is sent again after its connection was lost
RETRIES = 2
#: how often a watched key is read (seconds)
WATCH_POLL_SECS = 1.0
INSTALL_HINT = "pip install 'stormpy[redis]' (redis-py with hiredis)"

# Delete nodes with their descendants: ARGV holds (parent hash, field) pairs; returns, per pair,
# 1 when something was removed.
_DELETE_SCRIPT = """
local result = {}
for i = 1, #ARGV, 2 do
  local parent, field = ARGV[i], ARGV[i + 1]
  local gone = redis.call('HDEL', parent, field)
  local stack = {parent .. '/' .. field}
  while #stack > 0 do
    local h = table.remove(stack)
    local names = redis.call('HKEYS', h)
    if #names > 0 then
      gone = 1
      for _, f in ipairs(names) do stack[#stack + 1] = h .. '/' .. f end
      redis.call('DEL', h)
    end
  end
  result[#result + 1] = gone
end
return result
"""


def _redis_module() -> Any:
    try:
        return importlib.import_module("redis")
    except ImportError:
        raise SettingError("topology.state.provider",
                           f"the redis provider needs redis-py: {INSTALL_HINT}") from None


class _Connection:
    """One redis-py client (its connection pool) shared by a store and its ``sub`` stores."""

    def __init__(self, config: RedisConfig) -> None:
        redis = _redis_module()
        retry = importlib.import_module("redis.retry")
        backoff = importlib.import_module("redis.backoff")
        self.config = config
        self.errors = redis.exceptions
        timeout = config.timeout_ms / 1000
        # a lost connection is retried briefly (every command sent is idempotent or a
        # transaction); a Redis that stays away fails the call within about the timeout
        self.client = redis.Redis(host=config.host, port=config.port, db=config.database,
                                  password=config.password, socket_timeout=timeout,
                                  socket_connect_timeout=timeout, health_check_interval=30,
                                  retry=retry.Retry(backoff.ExponentialBackoff(cap=0.1, base=0.01),
                                                    RETRIES))
        self.delete_script = self.client.register_script(_DELETE_SCRIPT)
        self.closed = False

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.client.close()


class RedisStore(Store):
    """The subtree below ``segments`` of the Redis of ``config`` (see the module doc)."""

    def __init__(self, config: RedisConfig, segments: tuple[str, ...] = (), *,
                 _conn: _Connection | None = None) -> None:
        self._conn = _conn if _conn is not None else _Connection(config)
        self._owner = _conn is None
        self.config = config
        self._segments = check_segments(f"redis {config.address}", tuple(segments))
        self._encoded = tuple(encode_segment(s) for s in self._segments)
        self.location = (f"redis {config.address} db {config.database} at "
                         + "/".join((config.prefix, *self._segments)))
        self.timeout_secs = config.timeout_ms / 1000
        self._own_hash = self._hash(self._encoded)
        # the empty fields marking the store's own node and its parents as nodes
        self._root_markers = [(self._hash(self._encoded[:i - 1]), self._encoded[i - 1])
                              for i in range(1, len(self._encoded) + 1)]

    # -- key mapping ----------------------------------------------------------------------------
    def _hash(self, encoded: tuple[str, ...]) -> str:
        return "/".join((self.config.prefix, *encoded))

    def _path(self, key: str) -> tuple[str, ...]:
        return self._encoded + tuple(encode_segment(s)
                                     for s in root_or_segments(self.location, key))

    def _field(self, key: str) -> tuple[str, str]:
        """(parent hash, field) holding ``key``'s value."""
        if key and isinstance(key, str) and "/" not in key and self._encoded:
            # one segment, the common case (a state row): no split, quoted only when needed
            plain = _PLAIN.fullmatch(key) and key not in (".", "..")
            return self._own_hash, (key.replace("=", "%3D") if plain else encode_segment(key))
        path = self._path(key)
        if not path:
            raise StateKeyError(self.where(key), "the Redis backend's root holds no value of its "
                                                 "own; use a store below it")
        return self._hash(path[:-1]), path[-1]

    def _markers(self, key: str) -> list[tuple[str, str]]:
        path = self._path(key)
        return [(self._hash(path[:i - 1]), path[i - 1]) for i in range(1, len(path))]

    # -- running commands -----------------------------------------------------------------------
    def _call(self, path: str, op: Callable[[], T]) -> T:
        errors = self._conn.errors
        if self._conn.closed:
            raise StateUnavailableError(path, "store is closed")
        try:
            return op()
        except (errors.ConnectionError, errors.TimeoutError) as exc:
            raise StateUnavailableError(path, f"Redis at {self.config.address} unreachable "
                                              f"(provider redis): {exc}") from None
        except errors.ResponseError as exc:
            if str(exc).startswith("OOM") or "maxmemory" in str(exc):
                raise StateUnavailableError(path, f"Redis at {self.config.address} is out of "
                                                  f"memory (provider redis): {exc}") from None
            if str(exc).startswith(("LOADING", "MASTERDOWN", "READONLY", "BUSY")):
                raise StateUnavailableError(path, f"Redis at {self.config.address} cannot serve "
                                                  f"now (provider redis): {exc}") from None
            raise StateStoreError(path, f"Redis at {self.config.address} failed: {exc}") from None
        except errors.RedisError as exc:
            raise StateStoreError(path, f"Redis at {self.config.address} failed: {exc}") from None

    # -- the store ------------------------------------------------------------------------------
    def get(self, key: str, default: Any = None) -> Any:
        parent, field = self._field(key)
        data = self._call(self.where(key), lambda: self._conn.client.hget(parent, field))
        return decode_state(self.where(key), data) if data else default

    def get_many(self, keys: Iterable[str]) -> dict[str, Any]:
        wanted = list(keys)
        if not wanted:
            return {}
        fields = [self._field(k) for k in wanted]

        def run() -> list[Any]:
            pipe = self._conn.client.pipeline(transaction=False)
            for parent, field in fields:
                pipe.hget(parent, field)
            return list(pipe.execute())
        found = self._call(self.location, run)
        return {k: decode_state(self.where(k), d) for k, d in zip(wanted, found, strict=True) if d}

    def put(self, key: str, value: Any) -> None:
        self.put_many({key: value})

    def _queue_puts(self, pipe: Any, items: Mapping[str, Any]) -> None:
        markers: set[tuple[str, str]] = set(self._root_markers)
        for key, value in items.items():
            parent, field = self._field(key)
            pipe.hset(parent, field, encode_state(f"{self.location}/{key}", value))
            if "/" in key:
                markers.update(self._markers(key))
        for parent, field in sorted(markers):
            pipe.hsetnx(parent, field, b"")

    def put_many(self, items: Mapping[str, Any]) -> None:
        if not items:
            return

        def run() -> None:
            pipe = self._conn.client.pipeline(transaction=True)
            self._queue_puts(pipe, items)
            pipe.execute()
        self._call(self.location, run)

    def _delete_args(self, keys: Iterable[str]) -> list[str]:
        args: list[str] = []
        for key in keys:
            args.extend(self._field(key))
        return args

    def delete(self, key: str) -> bool:
        args = self._delete_args([key])
        result = self._call(self.where(key), lambda: self._conn.delete_script(args=args))
        return bool(result and result[0])

    def delete_many(self, keys: Iterable[str]) -> None:
        args = self._delete_args(keys)
        if args:
            self._call(self.location, lambda: self._conn.delete_script(args=args))

    def write_batch(self, puts: Mapping[str, Any], deletes: Iterable[str] = ()) -> None:
        """Puts, then deletes, in order, in one pipeline sent :data:`PIPELINE_BATCH` commands at
        a time (not atomic: see the module doc)."""
        self._write_rows(((key, encode_state(f"{self.location}/{key}", value))
                          for key, value in puts.items()), deletes)

    def write_encoded(self, puts: Iterable[tuple[str, bytes]], deletes: Iterable[str] = ()
                      ) -> None:
        """``write_batch`` of documents already encoded: no value packed again."""
        self._write_rows(puts, deletes)

    def _write_rows(self, rows: Iterable[tuple[str, bytes]], deletes: Iterable[str]) -> None:
        deleted = list(deletes)
        own_hash, plain, at_root = self._own_hash, _PLAIN.fullmatch, not self._encoded

        def run() -> None:
            pipe = self._conn.client.pipeline(transaction=False)
            queued = 0
            for parent, field in self._root_markers:
                pipe.hsetnx(parent, field, b"")
            group: list[Any] = []  # field, value, ... of consecutive puts into one hash
            group_parent = ""
            for key, data in rows:
                if at_root or "/" in key or not plain(key) or key in (".", ".."):
                    parent, field = self._field(key)
                    for m_parent, m_field in (self._markers(key) if "/" in key else ()):
                        pipe.hsetnx(m_parent, m_field, b"")
                        queued += 1
                else:  # one plain segment below the store (a state row): _field's fast path
                    parent, field = own_hash, key.replace("=", "%3D")
                if parent != group_parent or len(group) >= 2 * HSET_FIELDS:
                    if group:
                        pipe.hset(group_parent, items=group)
                        queued += 1
                    group, group_parent = [], parent
                group += (field, data)
                if queued >= PIPELINE_BATCH // HSET_FIELDS:
                    pipe.execute()
                    queued = 0
            if group:
                pipe.hset(group_parent, items=group)
            for start in range(0, len(deleted), PIPELINE_BATCH // 10):
                args = self._delete_args(deleted[start:start + PIPELINE_BATCH // 10])
                self._conn.delete_script(args=args, client=pipe)
                queued += 1
                if queued >= PIPELINE_BATCH // 100:
                    pipe.execute()
                    queued = 0
            pipe.execute()
        self._call(self.location, run)

    def children(self, key: str = "") -> list[str]:
        node = self._hash(self._path(key))
        names = self._call(self.where(key), lambda: self._conn.client.hkeys(node))
        return sorted(decode_segment(n.decode()) for n in names)

    def scan(self, key: str = "", *, prefix: str = "", page: int = 1000
             ) -> Iterator[tuple[str, Any]]:
        node = self._hash(self._path(key))
        where = self.where(key)
        match = _glob_escape(encode_segment(prefix)) + "*" if prefix else None
        cursor = 0
        while True:
            at = cursor
            cursor, found = self._call(where, lambda: self._conn.client.hscan(
                node, at, match=match, count=page))  # noqa: B023
            for name, data in found.items():
                if data:
                    child = decode_segment(name.decode())
                    yield child, decode_state(f"{where}/{child}", data)
            if not cursor:
                return

    def count(self, key: str = "") -> int:
        node = self._hash(self._path(key))
        return int(self._call(self.where(key), lambda: self._conn.client.hlen(node)))

    def update(self, key: str, fn: Callable[[Any], Any]) -> bool:
        parent, field = self._field(key)
        path = self.where(key)
        errors = self._conn.errors

        def attempt() -> bool | None:
            with self._conn.client.pipeline(transaction=True) as pipe:
                pipe.watch(parent)
                data = pipe.hget(parent, field)
                new = fn(decode_state(path, data) if data else None)
                if new is None:
                    return False
                encoded = encode_state(path, new)
                pipe.multi()
                self._queue_raw(pipe, key, parent, field, encoded)
                try:
                    pipe.execute()
                except errors.WatchError:
                    return None
                return True

        for _round in update_rounds():
            done = self._call(path, attempt)
            if done is not None:
                return done
        raise StateUnavailableError(path, f"changed by others {MAX_UPDATE_ROUNDS} times in a row")

    def _queue_raw(self, pipe: Any, key: str, parent: str, field: str, data: bytes) -> None:
        pipe.hset(parent, field, data)
        for m_parent, m_field in sorted(set(self._root_markers) | set(self._markers(key))):
            pipe.hsetnx(m_parent, m_field, b"")

    def sub(self, *segments: str) -> RedisStore:
        check_segments(self.location, segments)
        return RedisStore(self.config, self._segments + segments, _conn=self._conn)

    def where(self, key: str) -> str:
        segments = root_or_segments(self.location, key)
        return "/".join((self.location, *segments))

    def watch(self, key: str, callback: Callable[[Any], None], *,
              poll_secs: float = WATCH_POLL_SECS) -> Callable[[], None]:
        """``callback(value or None)`` now (a failure to read raises, as ``get``), then on the
        watch's thread whenever a poll reads a different value; returns the function that stops
        the polls (see the module doc)."""
        last = [self.get(key)]
        callback(last[0])

        def poll() -> None:
            if self._conn.closed:  # the store was closed without cancelling the watch
                service.request_stop()
                return
            value = self.get(key)
            if value != last[0]:
                last[0] = value
                callback(value)

        service = Service(f"redis watch {self.where(key)}", poll, interval=poll_secs,
                          first_delay=poll_secs, expected_errors=(StateStoreError,)).start()

        def cancel() -> None:
            service.request_stop()
        return cancel

    def available(self) -> bool:
        try:
            return bool(self._call(self.location, self._conn.client.ping))
        except StateStoreError:
            return False

    def close(self) -> None:
        """Close the connections (a ``sub`` store leaves them to the store it came from)."""
        if self._owner:
            self._conn.close()


def _glob_escape(text: str) -> str:
    return "".join("\\" + c if c in "*?[]\\" else c for c in text)


def open_redis_store(config: RedisConfig, *segments: str) -> RedisStore:
    """A store at ``segments`` below the prefix on a connection pool of its own (closed with the
    store). Connections are made on first use: an unreachable Redis shows in the first call."""
    return RedisStore(config, segments)
