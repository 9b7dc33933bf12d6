"""Workers' run-time log levels and control requests, as documents and as read-modify-writes."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from stormpy.cluster import worker_ops as ops
from stormpy.cluster.errors import MalformedStateError
from stormpy.cluster.paths import ZkPaths
from stormpy.cluster.records import decode_value, encode_value
from stormpy.cluster.worker_ops import parse_level_setting


def test_an_unknown_level_is_refused_naming_the_logger() -> None:
    with pytest.raises(ValueError, match="'my.logger'"):
        parse_level_setting("my.logger=LOUD")


class _Storage:
    """The few ZooKeeper operations the worker operations use, in a dict (sequential nodes numbered
    like ZooKeeper's)."""

    def __init__(self) -> None:
        self.nodes: dict[str, bytes] = {}
        self.seq = 0

    def get(self, path: str) -> bytes | None:
        return self.nodes.get(path)

    def set(self, path: str, data: bytes) -> None:
        self.nodes[path] = data

    def exists(self, path: str) -> bool:
        return path in self.nodes

    def create(self, path: str, data: bytes, *, sequence: bool = False, makepath: bool = True) -> str:
        assert sequence and not makepath
        full = f"{path}{self.seq:010d}"
        self.seq += 1
        self.nodes[full] = data
        return full

    def delete(self, path: str) -> None:
        self.nodes.pop(path, None)

    def children(self, path: str) -> list[str]:
        prefix = path + "/"
        return [p[len(prefix):] for p in self.nodes if p.startswith(prefix) and "/" not in p[len(prefix):]]


class _State:
    def __init__(self) -> None:
        self.paths = ZkPaths("/stormpy")
        self.storage = _Storage()


def _state() -> Any:
    return _State()


def test_level_names_map_to_logging_levels() -> None:
    assert ops.LEVELS == {"ALL": 1, "TRACE": 5, "DEBUG": logging.DEBUG, "INFO": logging.INFO,
                          "WARN": logging.WARNING, "WARNING": logging.WARNING, "ERROR": logging.ERROR,
                          "FATAL": logging.CRITICAL, "CRITICAL": logging.CRITICAL,
                          "OFF": logging.CRITICAL + 10}
    assert (ops.ROOT_LOGGER, ops.ANSWERED_TTL_SECS) == ("ROOT", 600.0)


def test_a_level_setting_parses_to_logger_level_and_timeout() -> None:
    assert ops.parse_level_setting(" my.app = debug ") == ("my.app", "DEBUG", 0)
    assert ops.parse_level_setting("ROOT=warn:30") == ("ROOT", "WARN", 30)
    assert ops.parse_level_setting("x=INFO: ") == ("x", "INFO", 0)
    assert ops.parse_level_setting("x=INFO:0") == ("x", "INFO", 0)


@pytest.mark.parametrize(("text", "message"), [
    ("x", "log level setting 'x' must be LOGGER=LEVEL[:TIMEOUT_SECS]"),
    (" =INFO", "log level setting ' =INFO' must be LOGGER=LEVEL[:TIMEOUT_SECS]"),
    ("x= ", "log level setting 'x= ' must be LOGGER=LEVEL[:TIMEOUT_SECS]"),
    ("x=INFO:soon", "log level setting 'x=INFO:soon': timeout 'soon' is not whole seconds"),
    ("x=INFO:-1", "log level setting 'x=INFO:-1': timeout must be >= 0 seconds"),
    ("x=LOUD", "logger 'x': level 'LOUD' is not one of ALL, TRACE, DEBUG, INFO, WARN, WARNING, ERROR, "
               "FATAL, CRITICAL, OFF"),
])
def test_a_bad_level_setting_is_refused_naming_it(text: str, message: str) -> None:
    with pytest.raises(ValueError) as info:
        ops.parse_level_setting(text)
    assert str(info.value) == message


def test_a_level_expires_only_at_its_timeout_epoch() -> None:
    level = ops.LoggerLevel("DEBUG", 10, 100.0, "INFO")
    assert not level.expired(99.9)
    assert level.expired(100.0)
    assert level.expired(101.0)
    assert not ops.LoggerLevel("DEBUG").expired(1e12)


def test_log_levels_are_stored_and_read_back_exactly() -> None:
    state = _state()
    assert ops.read_log_config(state, "t-1") == ops.LogConfig({})
    config = ops.change_log_config(state, "t-1", [("my.app", "DEBUG", 30), ("ROOT", "WARN", 0)], now=1000.0)
    assert config == ops.LogConfig({"my.app": ops.LoggerLevel("DEBUG", 30, 1030.0, None),
                                    "ROOT": ops.LoggerLevel("WARN", 0, 0.0, None)})
    stored = decode_value(state.storage.nodes["/stormpy/logconfigs/t-1"], "/p")
    assert stored == {"my.app": {"target_level": "DEBUG", "timeout": 30, "timeout_epoch": 1030.0,
                                 "reset_log_level": None},
                      "ROOT": {"target_level": "WARN", "timeout": 0, "timeout_epoch": 0.0,
                               "reset_log_level": None}}
    assert ops.read_log_config(state, "t-1") == config
    assert config.to_storm_json() == {"namedLoggerLevels": {
        "ROOT": {"target_level": "WARN", "reset_level": "", "timeout": 0, "timeout_epoch": 0},
        "my.app": {"target_level": "DEBUG", "reset_level": "", "timeout": 30, "timeout_epoch": 1030000}}}


def test_a_changed_logger_keeps_its_reset_level_and_a_reset_expires_at_once() -> None:
    state = _state()
    ops.write_log_config(state, "t-1", ops.LogConfig({"a": ops.LoggerLevel("DEBUG", 5, 50.0, "WARN")}))
    config = ops.change_log_config(state, "t-1", [("a", "ERROR", 0)], resets=[], now=100.0)
    assert config.named_logger_level["a"] == ops.LoggerLevel("ERROR", 0, 0.0, "WARN")
    config = ops.change_log_config(state, "t-1", [], resets=["a", "b"], now=200.0)
    assert config.named_logger_level == {"a": ops.LoggerLevel("ERROR", 0, 200.0 - 1e-3, "WARN"),
                                         "b": ops.LoggerLevel("INFO", 0, 200.0 - 1e-3, None)}
    assert all(lv.expired(200.0) for lv in config.named_logger_level.values())
    assert not any(lv.expired(199.99) for lv in config.named_logger_level.values())
    assert ops.read_log_config(state, "t-1") == config


def test_log_levels_without_a_time_use_the_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ops.time, "time", lambda: 500.0)
    config = ops.change_log_config(_state(), "t-1", [("a", "DEBUG", 10)])
    assert config.named_logger_level["a"].timeout_epoch == 510.0


def test_a_stored_log_config_reads_leniently_and_refuses_what_is_no_config() -> None:
    value = {"a": {"target_level": "debug", "reset_log_level": "warn"}, 7: {"target_level": "INFO",
                                                                            "timeout": 3, "timeout_epoch": 9}}
    assert ops.LogConfig.from_value(value) == ops.LogConfig({
        "a": ops.LoggerLevel("DEBUG", 0, 0.0, "WARN"), "7": ops.LoggerLevel("INFO", 3, 9.0, None)})
    assert ops.LogConfig.from_value(None) == ops.LogConfig({})
    with pytest.raises(ValueError, match="^/p: expected a map of logger names, got list$"):
        ops.LogConfig.from_value([1], "/p")
    with pytest.raises(ValueError, match="^log config: expected a map of logger names, got str$"):
        ops.LogConfig.from_value("x")
    with pytest.raises(ValueError, match="^/p: logger 'a' is not a map$"):
        ops.LogConfig.from_value({"a": "DEBUG"}, "/p")
    with pytest.raises(ValueError, match="^logger 'a': level 'LOUD' is not one of"):
        ops.LogConfig.from_value({"a": {"target_level": "LOUD"}}, "/p")
    with pytest.raises(ValueError, match="^logger 'a': level 'LOUD' is not one of"):
        ops.LogConfig.from_value({"a": {"target_level": "INFO", "reset_log_level": "LOUD"}}, "/p")


def test_a_stored_log_config_that_is_no_map_is_refused_naming_the_znode() -> None:
    state = _state()
    state.storage.set("/stormpy/logconfigs/t-1", encode_value([1]))
    with pytest.raises(ValueError, match="^/stormpy/logconfigs/t-1: expected a map of logger names"):
        ops.read_log_config(state, "t-1")
    state.storage.set("/stormpy/logconfigs/t-1", b"\xc1")
    with pytest.raises(MalformedStateError, match="/stormpy/logconfigs/t-1"):
        ops.read_log_config(state, "t-1")


def test_a_request_to_a_worker_without_a_channel_is_refused() -> None:
    with pytest.raises(LookupError, match=r"^worker n:6700 of t-1 has no control channel yet "
                                          r"\(it is starting, or runs a stormpy without one\)$"):
        ops.submit_request(_state(), "t-1", "n", 6700, "dump")


def test_a_request_goes_to_the_worker_answered_and_removed(monkeypatch: pytest.MonkeyPatch) -> None:
    state = _state()
    parent = "/stormpy/workercontrol/t-1/n-6700"
    state.storage.set(parent, b"")
    monkeypatch.setattr(ops.time, "time", lambda: 50.0)
    path = ops.submit_request(state, "t-1", "n", 6700, "heapdump", {"live": True})
    assert path == parent + "/r0000000000"
    request = ops.ControlRequest("heapdump", {"live": True}, 50.0)
    assert decode_value(state.storage.nodes[path], path) == {
        "action": "heapdump", "args": {"live": True}, "requested_at": 50.0, "status": "pending", "result": {},
        "error": None, "answered_at": None}
    assert ops.read_request(state, path) == request
    assert ops.pending_requests(state, "t-1", "n", 6700, now=60.0) == [(path, request)]
    monkeypatch.setattr(ops.time, "time", lambda: 70.0)
    done = request.answered(result={"file": "dump.hprof"})
    assert done == ops.ControlRequest("heapdump", {"live": True}, 50.0, "done", {"file": "dump.hprof"},
                                      None, 70.0)
    ops.answer_request(state, path, done)
    assert state.storage.nodes[path + ".answer"] == encode_value(done.to_value())
    assert ops.read_request(state, path) == done
    assert ops.pending_requests(state, "t-1", "n", 6700, now=70.0 + 600.0) == []
    assert path in state.storage.nodes  # answered, not yet older than the TTL
    assert ops.pending_requests(state, "t-1", "n", 6700, now=70.0 + 600.1) == []
    assert path not in state.storage.nodes and path + ".answer" not in state.storage.nodes
    assert ops.read_request(state, path) is None


def test_a_failed_answer_carries_the_error() -> None:
    failed = ops.ControlRequest("x").answered(error="unknown action 'x'")
    assert (failed.status, failed.error, failed.result) == ("failed", "unknown action 'x'", {})
    assert failed.answered_at is not None


def test_pending_requests_come_oldest_first_and_bad_ones_are_answered_failed() -> None:
    state = _state()
    parent = "/stormpy/workercontrol/t-1/n-1"
    state.storage.set(parent, b"")
    first = ops.submit_request(state, "t-1", "n", 1, "a")
    bad = ops.submit_request(state, "t-1", "n", 1, "b")
    third = ops.submit_request(state, "t-1", "n", 1, "c")
    state.storage.set(bad, encode_value({"args": {}}))
    state.storage.set(parent + "/r9.answer", encode_value({"action": "gone"}))  # its request was removed
    found = ops.pending_requests(state, "t-1", "n", 1, now=5.0)
    assert [(p, r.action) for p, r in found] == [(first, "a"), (third, "c")]
    answer = ops.read_request(state, bad)
    assert answer is not None and (answer.action, answer.status) == ("?", "failed")
    assert answer.error == f"{bad}: not a control request"
    assert parent + "/r9.answer" not in state.storage.nodes
    ops.remove_request(state, first)
    assert first not in state.storage.nodes


def test_a_control_request_reads_leniently() -> None:
    assert ops.ControlRequest.from_value({"action": "a"}, "/p") == \
        ops.ControlRequest("a", {}, 0.0, "pending", {}, None, None)
    with pytest.raises(ValueError, match="^/p: not a control request$"):
        ops.ControlRequest.from_value({"action": 1}, "/p")
    with pytest.raises(ValueError, match="^/p: not a control request$"):
        ops.ControlRequest.from_value(["a"], "/p")


def test_a_one_second_timeout_expires_one_second_later_and_a_reset_clears_the_timeout() -> None:
    state = _state()
    config = ops.change_log_config(state, "t-1", [("a", "DEBUG", 1)], now=100.0)
    assert config.named_logger_level["a"] == ops.LoggerLevel("DEBUG", 1, 101.0, None)
    config = ops.change_log_config(state, "t-1", [], resets=["a"], now=100.5)
    assert config.named_logger_level["a"] == ops.LoggerLevel("DEBUG", 0, 100.5 - 1e-3, None)


def test_an_early_timeout_epoch_still_expires() -> None:
    assert ops.LoggerLevel("DEBUG", 1, 0.5).expired(1.0)


def test_a_level_setting_splits_at_the_first_equals_sign() -> None:
    with pytest.raises(ValueError, match="^logger 'a': level 'b=INFO' is not one of"):
        ops.parse_level_setting("a=b=INFO")


def test_an_unreadable_request_is_answered_failed_at_the_time_it_was_found(
        monkeypatch: pytest.MonkeyPatch) -> None:
    state = _state()
    parent = "/stormpy/workercontrol/t-1/n-1"
    state.storage.set(parent, b"")
    state.storage.set(parent + "/r0000000001", encode_value({"args": {}}))
    monkeypatch.setattr(ops.time, "time", lambda: 9.0)
    assert ops.pending_requests(state, "t-1", "n", 1, now=5.0) == []
    assert ops.read_request(state, parent + "/r0000000001") == ops.ControlRequest(
        "?", {}, 5.0, "failed", {}, f"{parent}/r0000000001: not a control request", 9.0)


def test_pending_requests_use_the_clock_and_drop_old_answers_without_a_time(
        monkeypatch: pytest.MonkeyPatch) -> None:
    state = _state()
    parent = "/stormpy/workercontrol/t-1/n-1"
    state.storage.set(parent, b"")
    state.storage.set(parent + "/r1", encode_value({"action": "a", "status": "done"}))
    monkeypatch.setattr(ops.time, "time", lambda: 600.5)
    assert ops.pending_requests(state, "t-1", "n", 1) == []
    assert parent + "/r1" not in state.storage.nodes


def test_a_request_gone_while_listing_is_skipped_and_the_rest_still_found() -> None:
    state = _state()
    parent = "/stormpy/workercontrol/t-1/n-1"
    state.storage.set(parent, b"")
    later = ops.submit_request(state, "t-1", "n", 1, "b")
    listed = state.storage.children

    def stale_children(path: str) -> list[str]:
        return ["r", *listed(path)]  # "r" was removed after the listing

    state.storage.children = stale_children
    assert [(p, r.action) for p, r in ops.pending_requests(state, "t-1", "n", 1, now=1.0)] == [(later, "b")]


def test_an_unreadable_request_or_answer_is_refused_naming_its_znode() -> None:
    state = _state()
    path = "/stormpy/workercontrol/t-1/n-1/r1"
    state.storage.set(path, b"\xc1")
    with pytest.raises(MalformedStateError) as info:
        ops.read_request(state, path)
    assert info.value.path == path
    state.storage.set(path + ".answer", b"\xc1")
    with pytest.raises(MalformedStateError) as info:
        ops.read_request(state, path)
    assert info.value.path == path + ".answer"
    state.storage.set(path + ".answer", encode_value([1]))
    with pytest.raises(ValueError, match=f"^{path}: not a control request$"):
        ops.read_request(state, path)
