"""CURVE on worker links (stormpy.messaging.curve): the keys a topology's config carries, the
errors naming the setting for bad ones, and the ZAP gate that lets only the topology's own key
pair in (real ZeroMQ sockets on loopback)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest
import zmq
from zmq.utils.monitor import recv_monitor_message

from stormpy.config import SettingError
from stormpy.messaging.curve import (
    CURVE_ENABLED_KEY,
    PUBLIC_KEY,
    SECRET_KEY,
    ZAP_DOMAIN,
    CurveGate,
    CurveKeyPair,
    connect_as_client,
    curve_enabled,
    serve,
    topology_keys,
    z85_key,
)
from stormpy.messaging.zmq_transport import ZmqTransport

PAIR = CurveKeyPair.generate()
OTHER = CurveKeyPair.generate()


def test_the_names_are_the_documented_settings() -> None:
    assert (CURVE_ENABLED_KEY, PUBLIC_KEY, SECRET_KEY, ZAP_DOMAIN) == (
        "storm.messaging.curve.enabled", "topology.messaging.curve.public.key",
        "topology.messaging.curve.secret.key", "stormpy-worker")


def test_a_generated_pair_is_fresh_z85_and_its_public_key_belongs_to_its_secret() -> None:
    assert len(PAIR.public) == len(PAIR.secret) == 40
    assert PAIR.public != PAIR.secret and PAIR != OTHER
    assert zmq.curve_public(PAIR.secret) == PAIR.public
    assert z85_key(PAIR.public, "k") == PAIR.public


def test_a_pair_comes_back_from_its_secret_key_as_text_or_bytes() -> None:
    assert CurveKeyPair.from_secret(PAIR.secret.decode()) == PAIR
    assert CurveKeyPair.from_secret(PAIR.secret) == PAIR
    assert z85_key(PAIR.secret.decode(), "k") == PAIR.secret


def test_the_pair_goes_into_a_config_as_text_and_never_shows_its_secret() -> None:
    assert PAIR.as_conf() == {PUBLIC_KEY: PAIR.public.decode(), SECRET_KEY: PAIR.secret.decode()}
    assert repr(PAIR) == f"CurveKeyPair(public={PAIR.public.decode()!r}, secret=<hidden>)"
    assert PAIR.secret.decode() not in repr(PAIR)


@pytest.mark.parametrize(("value", "got"), [
    ("short", "5 characters"), (PAIR.secret.decode() + "0", "41 characters"), (b"x" * 39, "39 characters"),
    ("", "0 characters"), (12345, "int"), (None, "NoneType"), (["a"] * 40, "list")])
def test_a_key_of_the_wrong_length_or_type_is_refused_naming_the_setting(value: Any, got: str) -> None:
    with pytest.raises(SettingError) as refused:
        z85_key(value, "my.key")
    assert str(refused.value) == f"my.key: must be a CURVE key in Z85 text (40 characters), got {got}"
    assert refused.value.setting == "my.key"


@pytest.mark.parametrize("value", [
    "~" * 40,  # not a Z85 character
    b"\xff" * 40,
    "#" * 40,  # Z85 characters, but each group of five is past 2**32
    "é" + PAIR.secret.decode()[1:],  # not ASCII (never taken for "?", itself a Z85 character)
    "?" * 39 + "é",
])
def test_a_key_that_is_not_z85_text_is_refused_naming_the_setting(value: Any) -> None:
    with pytest.raises(SettingError) as refused:
        z85_key(value, "my.key")
    assert str(refused.value) == "my.key: is not valid Z85 text (a CURVE key)"
    # no decoder error shown along with it (the value may be a secret key)
    assert refused.value.__cause__ is None
    assert refused.value.__context__ is None or refused.value.__suppress_context__


def test_a_bad_secret_key_is_refused_naming_the_secret_key_setting_or_the_given_one() -> None:
    with pytest.raises(SettingError, match=f"^{SECRET_KEY}: must be a CURVE key"):
        CurveKeyPair.from_secret("nope")
    with pytest.raises(SettingError, match="^other.key: is not valid Z85"):
        CurveKeyPair.from_secret("~" * 40, "other.key")


def test_curve_is_off_unless_switched_on_with_a_bool() -> None:
    assert curve_enabled({}) is False
    assert curve_enabled({CURVE_ENABLED_KEY: None}) is False
    assert curve_enabled({CURVE_ENABLED_KEY: False}) is False
    assert curve_enabled({CURVE_ENABLED_KEY: True}) is True
    for bad in ("true", 1, 0):
        with pytest.raises(SettingError) as refused:
            curve_enabled({CURVE_ENABLED_KEY: bad})
        assert str(refused.value) == f"{CURVE_ENABLED_KEY}: must be true or false, got {bad!r}"


def test_a_worker_config_without_a_secret_key_has_plain_links() -> None:
    assert topology_keys({}) is None
    assert topology_keys({SECRET_KEY: None, PUBLIC_KEY: PAIR.public.decode()}) is None
    assert topology_keys({SECRET_KEY: "", PUBLIC_KEY: PAIR.public.decode()}) is None


def test_a_worker_config_gives_back_the_topology_pair_with_or_without_its_public_key() -> None:
    assert topology_keys(PAIR.as_conf()) == PAIR
    assert topology_keys({SECRET_KEY: PAIR.secret.decode()}) == PAIR
    assert topology_keys({SECRET_KEY: PAIR.secret.decode(), PUBLIC_KEY: None}) == PAIR
    assert topology_keys({SECRET_KEY: PAIR.secret.decode(), PUBLIC_KEY: ""}) == PAIR


def test_a_public_key_of_another_pair_or_not_a_key_is_refused_naming_the_public_key() -> None:
    with pytest.raises(SettingError) as refused:
        topology_keys({SECRET_KEY: PAIR.secret.decode(), PUBLIC_KEY: OTHER.public.decode()})
    assert str(refused.value) == f"{PUBLIC_KEY}: does not belong to {SECRET_KEY}"
    with pytest.raises(SettingError, match=f"^{PUBLIC_KEY}: must be a CURVE key"):
        topology_keys({SECRET_KEY: PAIR.secret.decode(), PUBLIC_KEY: "abc"})
    with pytest.raises(SettingError, match=f"^{SECRET_KEY}: is not valid Z85"):
        topology_keys({SECRET_KEY: "~" * 40, PUBLIC_KEY: PAIR.public.decode()})


@pytest.fixture
def context() -> Iterator[zmq.Context[Any]]:
    ctx: zmq.Context[Any] = zmq.Context()
    yield ctx
    ctx.destroy(linger=0)


def handshake(push: zmq.Socket[Any], endpoint: str) -> int:
    """Connect ``push`` to ``endpoint`` and return how its first handshake ended (a monitor event)."""
    monitor = push.get_monitor_socket(zmq.EVENT_HANDSHAKE_SUCCEEDED | zmq.EVENT_HANDSHAKE_FAILED_AUTH
                                      | zmq.EVENT_HANDSHAKE_FAILED_PROTOCOL
                                      | zmq.EVENT_HANDSHAKE_FAILED_NO_DETAIL)
    try:
        push.connect(endpoint)
        assert monitor.poll(30_000), "no handshake within 30 s"
        return int(recv_monitor_message(monitor)["event"])
    finally:
        push.disable_monitor()
        monitor.close(linger=0)


def curve_client(context: zmq.Context[Any], keys: CurveKeyPair, server_public: bytes) -> zmq.Socket[Any]:
    push = context.socket(zmq.PUSH)
    push.setsockopt(zmq.LINGER, 0)
    connect_as_client(push, keys, server_public)
    return push


def test_a_client_with_the_topology_pair_gets_in_and_its_frames_arrive(context: zmq.Context[Any]) -> None:
    server = ZmqTransport("127.0.0.1", 0, hwm=10, curve=PAIR)
    try:
        push = curve_client(context, PAIR, PAIR.public)
        assert handshake(push, f"tcp://127.0.0.1:{server.port}") == zmq.EVENT_HANDSHAKE_SUCCEEDED
        push.send(b"sealed")
        server.wait(30)
        assert [bytes(f) for f in server.receive(10)] == [b"sealed"]
    finally:
        server.close()


def test_a_client_with_a_pair_of_its_own_fails_the_handshake(context: zmq.Context[Any]) -> None:
    server = ZmqTransport("127.0.0.1", 0, hwm=10, curve=PAIR)
    try:
        push = curve_client(context, OTHER, PAIR.public)
        assert handshake(push, f"tcp://127.0.0.1:{server.port}") == zmq.EVENT_HANDSHAKE_FAILED_AUTH
    finally:
        server.close()


def test_a_plain_client_cannot_talk_to_a_curve_worker(context: zmq.Context[Any]) -> None:
    server = ZmqTransport("127.0.0.1", 0, hwm=10, curve=PAIR)
    try:
        push = context.socket(zmq.PUSH)
        push.setsockopt(zmq.LINGER, 0)
        # which failure ZeroMQ reports depends on when it notices the mechanism mismatch
        assert handshake(push, f"tcp://127.0.0.1:{server.port}") in (
            zmq.EVENT_HANDSHAKE_FAILED_PROTOCOL, zmq.EVENT_HANDSHAKE_FAILED_NO_DETAIL)
    finally:
        server.close()


def test_serve_makes_a_curve_server_in_the_gate_domain(context: zmq.Context[Any]) -> None:
    gate = CurveGate(context, frozenset([OTHER.public]))
    pull = context.socket(zmq.PULL)
    try:
        serve(pull, PAIR)
        assert pull.curve_server == 1 and pull.zap_domain == ZAP_DOMAIN.encode()
        port = pull.bind_to_random_port("tcp://127.0.0.1")
        # the gate allows OTHER's key; the server's own pair is PAIR, which clients must name
        push = curve_client(context, OTHER, PAIR.public)
        assert handshake(push, f"tcp://127.0.0.1:{port}") == zmq.EVENT_HANDSHAKE_SUCCEEDED
        wrong_server = curve_client(context, OTHER, OTHER.public)
        assert handshake(wrong_server, f"tcp://127.0.0.1:{port}") != zmq.EVENT_HANDSHAKE_SUCCEEDED
    finally:
        pull.close(linger=0)
        gate.stop()


def test_the_gate_stops_its_thread_once_and_a_second_stop_does_nothing(context: zmq.Context[Any]) -> None:
    before = set(threading.enumerate())
    gate = CurveGate(context, frozenset([PAIR.public]))
    started = set(threading.enumerate()) - before
    assert started and all(t.is_alive() for t in started)
    gate.stop()
    assert not any(t.is_alive() for t in started)
    gate.stop()
