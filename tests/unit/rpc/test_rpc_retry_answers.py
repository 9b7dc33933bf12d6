"""The RPC server's answers to retried requests (stormpy.rpc.retries): a finished request is
answered from a bounded cache, a running one collects every attempt's envelope."""

from __future__ import annotations

from stormpy.rpc.retries import ResponseCache, RetryAnswers


def test_attempts_of_a_running_request_wait_for_its_answer_which_is_then_cached() -> None:
    answers = RetryAnswers(max_entries=4, max_bytes=1024)
    assert answers.cached("r1") is None
    assert not answers.join("r1", [b"client-a"])
    answers.started("r1", [b"client-a"])
    assert answers.join("r1", [b"client-b"])
    assert answers.finished("r1", b"answer") == [[b"client-a"], [b"client-b"]]
    assert answers.cached("r1") == b"answer"
    assert not answers.join("r1", [b"client-c"])  # no longer running: the cache answers it
    assert answers.finished("r2", b"late") == []  # nobody waiting: cached all the same
    assert answers.cached("r2") == b"late"


def test_the_cache_evicts_the_oldest_by_count_and_by_bytes() -> None:
    cache = ResponseCache(max_entries=2, max_bytes=10)
    cache.put("a", b"1234")
    cache.put("b", b"1234")
    cache.put("c", b"1234")
    assert (cache.get("a"), cache.get("b"), cache.get("c")) == (None, b"1234", b"1234")
    cache.put("d", b"123456789")
    assert (len(cache), cache.get("c"), cache.get("d")) == (1, None, b"123456789")
    cache.put("huge", b"x" * 11)  # bigger than the whole cache: not kept
    assert cache.get("huge") is None and cache.get("d") == b"123456789"


def test_putting_an_id_again_replaces_its_answer_without_counting_it_twice() -> None:
    cache = ResponseCache(max_entries=4, max_bytes=8)
    cache.put("a", b"1234")
    cache.put("a", b"5678")
    cache.put("b", b"1234")
    assert (cache.get("a"), cache.get("b")) == (b"5678", b"1234")
