"""Fuzzing the inputs a peer controls: RPC frames and uploaded bundles. No input may raise anything
but the documented error types, crash the server, or leave a file or session behind."""

from __future__ import annotations

import hashlib
import io
import tempfile
import zipfile
from pathlib import Path

import msgpack
import pytest
import zmq
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stormpy.bundle import BundleError, Manifest, verify_bundle
from stormpy.nimbus.localdirs import NimbusDirs
from stormpy.nimbus.uploads import UploadManager
from stormpy.rpc import RpcClient, RpcServer, rpc_method
from stormpy.rpc.codec import decode_request, peek_request_id
from stormpy.rpc.errors import InvalidRequestError, UploadError

FUZZ = settings(max_examples=80, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow,
                                                                       HealthCheck.function_scoped_fixture])


def _valid_bundle() -> bytes:
    buf = io.BytesIO()
    data = b"def run():\n    return 42\n" * 20
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("topo.py", data)
        zf.writestr("MANIFEST.json", Manifest(files={"topo.py": hashlib.sha256(data).hexdigest()},
                                              created=1.0).to_json())
    return buf.getvalue()


VALID = _valid_bundle()
msgpack_values = st.recursive(
    st.none() | st.booleans() | st.integers(-2**63, 2**64 - 1) | st.text(max_size=20)
    | st.binary(max_size=20),
    lambda inner: st.lists(inner, max_size=4)
    | st.dictionaries(st.text(max_size=8) | st.integers(0, 99), inner, max_size=4),
    max_leaves=12)
request_docs = st.fixed_dictionaries({}, optional={
    "v": st.sampled_from([1, 2, None, "1"]), "id": st.text(max_size=10) | st.integers(-2**63, 2**63 - 1),
    "method": st.sampled_from(["echo", "begin_upload", "", "__ping__"]) | msgpack_values,
    "args": msgpack_values, "auth": msgpack_values})
frames = st.binary(max_size=200) | request_docs.map(lambda d: msgpack.packb(d, use_bin_type=True))


@st.composite
def mutated_bundles(draw: st.DrawFn) -> bytes:
    data = bytearray(VALID)
    for _ in range(draw(st.integers(1, 8))):
        at = draw(st.integers(0, len(data) - 1))
        data[at] = draw(st.integers(0, 255))
    if draw(st.booleans()):
        del data[draw(st.integers(1, len(data) - 1)):]
    return bytes(data)


@FUZZ
@given(frames)
def test_request_decoder_raises_only_invalid_request(data: bytes) -> None:
    peek_request_id(data)
    try:
        decode_request(data)
    except InvalidRequestError:
        pass


@FUZZ
@given(mutated_bundles() | st.binary(max_size=400))
def test_bundle_reader_raises_only_bundle_error(data: bytes) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "b.zip"
        path.write_bytes(data)
        try:
            verify_bundle(path, max_unpacked_bytes=1_000_000)
        except BundleError:
            pass


@FUZZ
@given(mutated_bundles())
def test_uploads_of_broken_bundles_leave_nothing_behind(data: bytes) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        dirs = NimbusDirs(Path(tmp))
        dirs.ensure()
        manager = UploadManager(dirs, max_bundle_bytes=100_000, expiration_secs=60)
        begun = manager.begin(len(data), "fuzz")
        manager.chunk(begun["upload_id"], data, 0)
        try:
            key = manager.finish(begun["upload_id"], hashlib.sha256(data).hexdigest())
        except UploadError:
            assert list(dirs.uploads.iterdir()) == []
        else:
            manager.take(key).path.unlink()
        assert manager.open_sessions == 0


class Echo:
    @rpc_method
    def echo(self, value: object = None) -> object:
        return value


@pytest.fixture(scope="module")
def server() -> RpcServer:
    with RpcServer("127.0.0.1", 0, Echo(), name="fuzz") as srv:
        yield srv


@pytest.fixture(scope="module")
def client(server: RpcServer) -> RpcClient:
    with RpcClient("127.0.0.1", server.port, timeout_secs=5) as rpc:
        yield rpc


@pytest.fixture(scope="module")
def raw(server: RpcServer) -> zmq.Socket[bytes]:
    ctx = zmq.Context()
    sock = ctx.socket(zmq.DEALER)
    sock.linger = 0
    sock.connect(f"tcp://127.0.0.1:{server.port}")
    yield sock
    sock.close()
    ctx.term()


@settings(max_examples=40, deadline=None, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(frames, min_size=1, max_size=3))
def test_rpc_server_survives_any_frames(client: RpcClient, raw: zmq.Socket[bytes],
                                        parts: list[bytes]) -> None:
    raw.send_multipart([b"", *parts])
    assert raw.poll(5000), "every request is answered, if only with an error"
    raw.recv_multipart()
    assert client.call("echo", value=[1, "x"]) == [1, "x"]  # and the server keeps serving
