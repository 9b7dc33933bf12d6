"""CURVE on worker links (stormpy.messaging.curve): a capture of the wire holds no tuple values
with CURVE on (and does with it off, so the capture sees the traffic), and nobody without the
topology's key pair (no keys, own keys, another topology's keys) gets a frame into a worker."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import msgpack
import pytest
import zmq
from wire_tap import TcpTap

from stormpy.config import SettingError
from stormpy.messaging.curve import CurveKeyPair, topology_keys
from stormpy.messaging.zmq_transport import ZmqTransport
from stormpy.testing import stays_unchanged, wait_for

pytestmark = pytest.mark.timeout(60)

SECRET_WORD = "zanzibar-quokka-7319"
#: How long a refused sender is watched for a frame that must never arrive.
REFUSED_WATCH_SECS = 1.5


@pytest.fixture
def transports() -> Iterator[Callable[..., ZmqTransport]]:
    made: list[ZmqTransport] = []

    def make(**kwargs: object) -> ZmqTransport:
        t = ZmqTransport("127.0.0.1", 0, **kwargs)  # type: ignore[arg-type]
        made.append(t)
        return t

    yield make
    for t in made:
        t.close()


@pytest.fixture
def raw_context() -> Iterator[zmq.Context[zmq.Socket[bytes]]]:
    ctx: zmq.Context[zmq.Socket[bytes]] = zmq.Context()
    yield ctx
    ctx.destroy(linger=0)


def word_frame(word: str) -> bytes:
    return msgpack.packb([[2, "default", 1, 11, 12, None, [word]]], use_bin_type=True)


def received_words(t: ZmqTransport, into: list[str]) -> int:
    for frame in t.receive(64):
        into.extend(rec[6][0] for rec in msgpack.unpackb(bytes(frame), raw=False))
    return len(into)


@pytest.mark.parametrize("curve", [False, True], ids=["plain", "curve"])
def test_a_capture_of_the_link_shows_tuple_values_only_without_curve(
        transports: Callable[..., ZmqTransport], curve: bool) -> None:
    keys = CurveKeyPair.generate() if curve else None
    receiver = transports(curve=keys)
    sender = transports(curve=keys)
    tap = TcpTap(receiver.port)
    try:
        sender.set_peers({"r": f"127.0.0.1:{tap.port}"})
        for _ in range(5):
            assert sender.send("r", word_frame(SECRET_WORD))
        got: list[str] = []
        wait_for(lambda: received_words(receiver, got) >= 5, 20, "the frames through the tap")
        assert got == [SECRET_WORD] * 5
        assert len(tap.captured) > 5 * len(SECRET_WORD)  # the tap saw the traffic
        assert (SECRET_WORD.encode() in tap.captured) is not curve
    finally:
        tap.close()


def test_plain_links_take_frames_from_anyone(transports: Callable[..., ZmqTransport],
                                             raw_context: zmq.Context[zmq.Socket[bytes]]) -> None:
    """The control of the refusal tests below: without CURVE a raw socket does inject."""
    receiver = transports()
    intruder = raw_context.socket(zmq.PUSH)
    intruder.linger = 0
    intruder.connect(f"tcp://127.0.0.1:{receiver.port}")
    intruder.send(word_frame("injected"))
    got: list[str] = []
    wait_for(lambda: received_words(receiver, got), 20, "the injected frame on a plain link")
    assert got == ["injected"]


def _plain_intruder(sock: zmq.Socket[bytes], keys: CurveKeyPair) -> None:
    """No CURVE at all."""


def _own_keys_intruder(sock: zmq.Socket[bytes], keys: CurveKeyPair) -> None:
    """A key pair of its own and the topology's (public) server key."""
    public, secret = zmq.curve_keypair()
    sock.curve_publickey, sock.curve_secretkey, sock.curve_serverkey = public, secret, keys.public


def _public_key_only_intruder(sock: zmq.Socket[bytes], keys: CurveKeyPair) -> None:
    """Claims the topology's public key without its secret key."""
    _, secret = zmq.curve_keypair()
    sock.curve_publickey, sock.curve_secretkey, sock.curve_serverkey = keys.public, secret, keys.public


@pytest.mark.parametrize("arm", [_plain_intruder, _own_keys_intruder, _public_key_only_intruder],
                         ids=["no-keys", "own-keys", "public-key-only"])
def test_a_process_without_the_topology_keys_cannot_inject(
        transports: Callable[..., ZmqTransport], raw_context: zmq.Context[zmq.Socket[bytes]],
        arm: Callable[[zmq.Socket[bytes], CurveKeyPair], None]) -> None:
    keys = CurveKeyPair.generate()
    receiver = transports(curve=keys)
    intruder = raw_context.socket(zmq.PUSH)
    intruder.linger = 0
    arm(intruder, keys)
    intruder.connect(f"tcp://127.0.0.1:{receiver.port}")
    intruder.send(word_frame("injected"), zmq.NOBLOCK)
    got: list[str] = []
    stays_unchanged(lambda: received_words(receiver, got), REFUSED_WATCH_SECS,
                    "frames from a sender without the topology's keys")
    # the worker still takes its own topology's frames
    sender = transports(curve=keys)
    sender.set_peers({"r": f"127.0.0.1:{receiver.port}"})
    assert sender.send("r", word_frame("legit"))
    wait_for(lambda: received_words(receiver, got), 20, "the frame of the topology's own worker")
    assert got == ["legit"]


def test_a_worker_of_another_topology_cannot_connect(transports: Callable[..., ZmqTransport]) -> None:
    receiver = transports(curve=CurveKeyPair.generate())
    other = transports(curve=CurveKeyPair.generate())
    other.set_peers({"r": f"127.0.0.1:{receiver.port}"})
    assert other.send("r", word_frame("cross-topology"))
    got: list[str] = []
    stays_unchanged(lambda: received_words(receiver, got), REFUSED_WATCH_SECS,
                    "frames from another topology's worker")


def test_topology_keys_come_from_the_config_and_bad_ones_are_named() -> None:
    pair = CurveKeyPair.generate()
    assert topology_keys({}) is None
    assert topology_keys(pair.as_conf()) == pair
    assert pair.secret.decode() not in repr(pair)
    with pytest.raises(SettingError, match="topology.messaging.curve.secret.key"):
        topology_keys({"topology.messaging.curve.secret.key": "short"})
    other = CurveKeyPair.generate()
    with pytest.raises(SettingError, match="topology.messaging.curve.public.key"):
        topology_keys({**pair.as_conf(), "topology.messaging.curve.public.key": other.public.decode()})
