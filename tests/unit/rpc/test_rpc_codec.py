"""RPC frames, typed errors and method exposure, without sockets."""

from __future__ import annotations

import builtins
import logging

import msgpack
import pytest

from stormpy.rpc import errors
from stormpy.rpc.codec import (
    PROTOCOL_VERSION,
    Request,
    Response,
    decode_request,
    decode_response,
    encode_request,
    encode_response,
    peek_request_id,
)
from stormpy.rpc.errors import (
    ERROR_TYPES,
    InternalError,
    InvalidRequestError,
    NotFoundError,
    RpcError,
    RpcTimeoutError,
    UnreachableError,
    UploadError,
    error_from_wire,
    register_error,
)
from stormpy.rpc.methods import MethodTable, rpc_method
from stormpy.rpc.refusals import LOG_FIELD_LIMIT, RefusalLog, shorten


def pack(doc: object) -> bytes:
    return msgpack.packb(doc, use_bin_type=True)


def test_request_round_trip() -> None:
    request = Request(id="abc", method="upload_chunk", args={"data": b"\x00\xff", "n": [1, 2]}, auth="s")
    decoded = decode_request(encode_request(request))
    assert decoded == request


def test_response_round_trip_success_and_error() -> None:
    ok = decode_response(encode_response(Response.success("1", {"a": [1, b"x"]})))
    assert ok.ok and ok.id == "1" and ok.result == {"a": [1, b"x"]}
    failed = decode_response(encode_response(Response.failure("2", NotFoundError("no topology 'x'"))))
    assert not failed.ok and failed.id == "2" and failed.error_type == "NotFoundError"
    with pytest.raises(NotFoundError, match="no topology 'x'"):
        failed.unwrap()


@pytest.mark.parametrize(("data", "needle"), [
    (b"\xc1garbage", "not a msgpack document"),
    (pack([1, 2]), "expected a map"),
    (pack({"v": 99, "id": "1", "method": "m"}), "unsupported protocol version 99"),
    (pack({"v": PROTOCOL_VERSION, "method": "m"}), "'id' must be a non-empty string"),
    (pack({"v": PROTOCOL_VERSION, "id": "1", "method": 5}), "'method' must be a non-empty string"),
    (pack({"v": PROTOCOL_VERSION, "id": "1", "method": "m", "args": [1]}), "'args' must be a map"),
    (pack({"v": PROTOCOL_VERSION, "id": "1", "method": "m", "args": {1: 2}}), "'args' must be a map"),
    (pack({"v": PROTOCOL_VERSION, "id": "1", "method": "m", "auth": 7}), "'auth' must be a string"),
])
def test_malformed_requests_name_the_problem(data: bytes, needle: str) -> None:
    with pytest.raises(InvalidRequestError, match="malformed request") as info:
        decode_request(data)
    assert needle in str(info.value)


@pytest.mark.parametrize(("data", "needle"), [
    (b"\x92", "not a msgpack document"),
    (pack({"v": PROTOCOL_VERSION, "id": 3, "ok": True}), "'id' must be a string or nil"),
    (pack({"v": PROTOCOL_VERSION, "id": "1", "ok": "yes"}), "'ok' must be a boolean"),
    (pack({"v": PROTOCOL_VERSION, "id": "1", "ok": False, "error": "x"}), "'error' must be a map"),
])
def test_malformed_responses_raise_rpc_error(data: bytes, needle: str) -> None:
    with pytest.raises(RpcError, match="malformed response") as info:
        decode_response(data)
    assert needle in str(info.value)


def test_peek_request_id_is_best_effort() -> None:
    assert peek_request_id(pack({"id": "x"})) == "x"
    assert peek_request_id(b"\xc1") is None
    assert peek_request_id(pack({"id": 3})) is None
    # a request the decoder refuses for a non-string key still gets its refusal under its own id
    assert peek_request_id(pack({"id": "r7", 1: "x"})) == "r7"


def test_unserialisable_args_are_refused_locally() -> None:
    with pytest.raises(InvalidRequestError, match="'submit'.*not msgpack-serialisable"):
        encode_request(Request(id="1", method="submit", args={"x": object()}))


def test_every_error_type_travels_with_its_class() -> None:
    for name, cls in ERROR_TYPES.items():
        error = error_from_wire(name, "msg")
        assert type(error) is cls
        assert error.message == "msg" and error.remote_type == name


def test_unknown_remote_type_becomes_rpc_error_with_the_remote_message() -> None:
    error = error_from_wire("QuotaExceeded", "too many topologies")
    assert type(error) is RpcError
    assert error.remote_type == "QuotaExceeded"
    assert "QuotaExceeded" in str(error) and "too many topologies" in str(error)


def test_registering_an_error_type() -> None:
    class QuotaError(RpcError):
        wire_name = "QuotaErrorForTest"

    register_error(QuotaError)
    try:
        assert type(error_from_wire("QuotaErrorForTest", "m")) is QuotaError

        class Clash(RpcError):
            wire_name = "QuotaErrorForTest"

        with pytest.raises(ValueError, match="already used"):
            register_error(Clash)
    finally:
        del ERROR_TYPES["QuotaErrorForTest"]


def test_timeout_errors_are_builtin_timeouts_too() -> None:
    assert issubclass(UnreachableError, RpcTimeoutError)
    assert issubclass(RpcTimeoutError, builtins.TimeoutError)
    assert errors.TimeoutError is RpcTimeoutError
    assert issubclass(UploadError, RpcError) and issubclass(InternalError, RpcError)


class Handler:
    @rpc_method
    def add(self, a: int, b: int = 0) -> int:
        return a + b

    @rpc_method(name="getClusterInfo")
    def cluster_info(self) -> dict[str, int]:
        return {"supervisors": 0}

    def not_exposed(self) -> None:
        raise AssertionError("must never be called over RPC")


def test_method_table_exposes_only_marked_methods() -> None:
    table = MethodTable(Handler(), {"extra": lambda: "x"})
    assert table.names == ["add", "extra", "getClusterInfo"]
    assert table.bind("add", {"a": 2, "b": 3})() == 5
    assert table.bind("getClusterInfo", {})() == {"supervisors": 0}
    with pytest.raises(InvalidRequestError, match="unknown method 'not_exposed'"):
        table.bind("not_exposed", {})


def test_method_table_refuses_bad_arguments_before_calling() -> None:
    table = MethodTable(Handler())
    with pytest.raises(InvalidRequestError, match="bad arguments for method 'add'"):
        table.bind("add", {"b": 1})
    with pytest.raises(InvalidRequestError, match="bad arguments for method 'add'"):
        table.bind("add", {"a": 1, "c": 2})


def test_method_table_refuses_duplicates() -> None:
    with pytest.raises(ValueError, match="exposed twice"):
        MethodTable(Handler(), {"add": lambda: None})


def test_rpc_method_marks_a_method_under_its_own_name_or_the_given_one() -> None:
    # decorated here, not at import time, so that the decorator itself is what is checked
    class Local:
        @rpc_method
        def echo(self, text: str) -> str:
            return text

        @rpc_method(name="getEcho")
        def named_echo(self, text: str) -> str:
            return text.upper()

    table = MethodTable(Local())
    assert table.names == ["echo", "getEcho"]
    assert table.bind("echo", {"text": "hi"})() == "hi"
    assert table.bind("getEcho", {"text": "hi"})() == "HI"
    assert Local().echo("x") == "x"  # the marked method is still the method


def test_shorten_escapes_and_cuts_peer_values_to_the_limit() -> None:
    assert shorten(("id", 7)) == "('id', 7)"  # non-strings are shown as their repr
    assert shorten("a\u00e9\n") == "a\\xe9\\n"  # escaped to ASCII
    exact = "x" * LOG_FIELD_LIMIT
    assert shorten(exact) == exact  # a value of exactly the limit is written whole
    longer = "y" * (LOG_FIELD_LIMIT + 1)
    assert shorten(longer) == f"{'y' * LOG_FIELD_LIMIT}...({LOG_FIELD_LIMIT + 1} chars)"


def test_refusal_log_writes_a_burst_per_interval_and_counts_the_rest(
        caplog: pytest.LogCaptureFixture) -> None:
    now = [100.0]
    refusals = RefusalLog("nimbus", burst=2, interval=10.0, clock=lambda: now[0])
    with caplog.at_level(logging.INFO, logger="stormpy.rpc.server"):
        assert refusals.refused("r1", "bad frame") is True
        assert refusals.refused("r2", "bad frame") is True
        now[0] = 105.0
        assert refusals.refused("r3", "bad frame") is False
        assert refusals.refused("r4", "bad frame") is False
        assert refusals.suppressed == 2
        now[0] = 110.0  # exactly one interval later: a new window
        assert refusals.refused("r5", "bad frame") is True
    messages = [r.getMessage() for r in caplog.records]
    assert messages[:2] == ["RPC server nimbus: refused request r1: bad frame",
                            "RPC server nimbus: refused request r2: bad frame"]
    assert "RPC server nimbus: 2 more requests refused in the last 10 s (not logged)" in messages
    assert messages[-1] == "RPC server nimbus: refused request r5: bad frame"
    assert refusals.suppressed == 0


def test_an_error_on_the_wire_is_its_type_name_and_message() -> None:
    assert NotFoundError("no topology 'x'").to_wire() == {"type": "NotFoundError",
                                                          "message": "no topology 'x'"}


def test_an_error_response_without_type_or_message_is_a_plain_rpc_error() -> None:
    bare = Response(id="3", ok=False)
    for response in (bare, decode_response(encode_response(bare))):
        with pytest.raises(RpcError) as info:
            response.unwrap()
        assert type(info.value) is RpcError and str(info.value) == ""
    sent = msgpack.unpackb(encode_response(bare))
    assert sent["error"] == {"type": "RpcError", "message": ""}


def test_by_default_the_refusal_log_writes_twenty_lines_per_ten_seconds() -> None:
    now = [0.0]
    refusals = RefusalLog("nimbus", clock=lambda: now[0])
    assert refusals.suppressed == 0
    assert all(refusals.refused(f"r{i}", "bad") for i in range(20))
    now[0] = 9.9
    assert refusals.refused("r20", "bad") is False
    now[0] = 10.0
    assert refusals.refused("r21", "bad") is True


def test_an_unknown_method_is_refused_naming_the_known_ones() -> None:
    with pytest.raises(InvalidRequestError) as info:
        MethodTable(Handler(), {"extra": lambda: "x"}).bind("nope", {})
    assert info.value.message == "unknown method 'nope' (known methods: add, extra, getClusterInfo)"
    with pytest.raises(InvalidRequestError) as info:
        MethodTable().bind("nope", {})
    assert info.value.message == "unknown method 'nope' (known methods: none)"


def test_keyword_only_arguments_reach_the_method() -> None:
    def tag(name: str, *, upper: bool = False) -> str:
        return name.upper() if upper else name

    assert MethodTable(methods={"tag": tag}).bind("tag", {"name": "wc", "upper": True})() == "WC"


def test_a_method_that_is_not_callable_is_refused_naming_it() -> None:
    with pytest.raises(TypeError, match="^RPC method 'answer' is not callable$"):
        MethodTable(methods={"answer": 42})  # type: ignore[dict-item]


@pytest.mark.parametrize(("data", "message"), [
    ("text", "malformed request: expected bytes, got str"),
    (b"\xc1", "malformed request: not a msgpack document (FormatError: )"),
    (pack([1, 2]), "malformed request: expected a map, got list"),
    (pack({"v": PROTOCOL_VERSION, "id": "", "method": "m"}),
     "malformed request: 'id' must be a non-empty string, got ''"),
    (pack({"v": PROTOCOL_VERSION, "id": "1", "method": "m", "args": {1: 2}}),
     "malformed request 1 (m): 'args' must be a map with string keys"),
])
def test_a_malformed_request_is_refused_with_the_whole_reason(data: bytes, message: str) -> None:
    with pytest.raises(InvalidRequestError) as info:
        decode_request(data)
    assert info.value.message == message


def test_an_error_response_needs_both_type_and_message() -> None:
    with pytest.raises(RpcError) as info:
        decode_response(pack({"v": PROTOCOL_VERSION, "id": "1", "ok": False, "error": {"type": "X"}}))
    assert info.value.message == ("malformed response 1: 'error' must be a map with string 'type' "
                                  "and 'message'")


def test_a_result_that_cannot_be_sent_is_named_as_the_response() -> None:
    with pytest.raises(InvalidRequestError, match="^response is not msgpack-serialisable: "):
        encode_response(Response.success("1", object()))
