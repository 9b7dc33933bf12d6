"""The Redis store's client parses replies with hiredis when hiredis is installed (the
``stormpy[redis]`` extra installs it): the pure-Python parser is several times slower on the
large pipelines of a checkpoint."""

from __future__ import annotations

from typing import Any

from parts_kit import fresh_redis_store


def test_the_redis_store_reads_replies_with_hiredis(redis_server: Any) -> None:
    from redis._parsers.hiredis import _HiredisParser
    from redis.utils import HIREDIS_AVAILABLE

    assert HIREDIS_AVAILABLE, "hiredis is not installed: pip install 'stormpy[redis]'"

    store = fresh_redis_store(redis_server, "hiredis")
    try:
        store.put("k", 1)
        pool = store._conn.client.connection_pool
        conn = pool.get_connection()
        try:
            assert isinstance(conn._parser, _HiredisParser)
        finally:
            pool.release(conn)
    finally:
        store.close()
