"""Contract: the fuzz targets of every decoder that reads bytes from outside the process.

Each target is a function ``data: bytes -> None`` that feeds ``data`` to one decoder the way the
receiving process does and checks the property every such decoder promises:

* bad input raises only the project's error type for that input (``InvalidRequestError`` /
  ``RpcError``, ``BundleError``, ``GarbageError`` / ``ProtocolError``, a 4xx JSON answer), with
  a non-empty message; any other exception (``KeyError``, ``TypeError``, ``RecursionError`` ...)
  escapes the target and is a finding;
* the receiver keeps serving: after the input, a known-good input is still handled (a worker
  still queues a valid tuple, a JSON decoder fed garbage is replaced as the shell component
  does, the UI still answers ``/api/v1/cluster/summary``).

Memory is bounded by the fuzzer (``-rss_limit_mb`` in ``run_fuzz.py``); time per input by its
``-timeout``. The same functions replay the kept corpus in the normal test suite
(``test_fuzz_regressions.py``), without atheris.
"""

from __future__ import annotations

import atexit
import io
import os
import shutil
import tempfile
import zipfile
from collections.abc import Callable
from functools import cache
from typing import Any

import msgpack

from stormpy import Bolt, Spout, Stream, TopologyBuilder
from stormpy.bundle import BundleError, Manifest, read_manifest, verify_bundle
from stormpy.bundle.manifest import MANIFEST_NAME
from stormpy.messaging.codec import decode_frame
from stormpy.multilang._protocol import BOLT_COMMANDS, SPOUT_COMMANDS, ProtocolError, check_command
from stormpy.multilang._serializers import GarbageError, JsonCodec, MsgpackCodec
from stormpy.rpc.codec import decode_request, decode_response, peek_request_id
from stormpy.rpc.errors import InvalidRequestError, RpcError
from stormpy.rpc.methods import MethodTable
from stormpy.topology._columns import ColumnBatch
from stormpy.worker import Worker, WorkerConfig
from stormpy.worker.inbound import Inbound, accepts

Target = Callable[[bytes], None]


def _message(exc: BaseException) -> None:
    """An expected refusal must say what was wrong."""
    if not str(exc).strip():
        raise AssertionError(f"{type(exc).__name__} without a message")


# -- worker frames (messaging/codec.py, worker/inbound.py) -------------------------------------

class _Src(Spout):
    outputs = [Stream(["word", "n"]), Stream(["x"], name="side")]


class _Mid(Bolt):
    outputs = ["out"]

    def execute(self, tup: Any) -> None:
        self.ack(tup)


class _Cols(Bolt):
    def execute_columns(self, batch: Any) -> None:
        self.ack(batch)


@cache
def _inbound_parts() -> tuple[dict[int, Any], dict[str, list[int]]]:
    b = TopologyBuilder()
    b.set_spout("src", _Src, 2)
    b.set_bolt("mid", _Mid, 2).shuffle_grouping("src").shuffle_grouping("src", "side")
    b.set_bolt("cols", _Cols).shuffle_grouping("mid")
    worker = Worker(WorkerConfig("fuzz", b.create_topology(), {"topology.acker.executors": 2},
                                 local_tasks=[]))
    table = accepts(worker.spec, worker.layout, sorted(worker.layout.task_component))
    return table, {c: list(t) for c, t in worker.layout.component_tasks.items()}


def worker_frames(data: bytes) -> None:
    """A peer's frame to a worker's port: ``Inbound.take`` never raises, queues only checked
    tuples, and a valid tuple after it is still queued."""
    table, tasks = _inbound_parts()
    queued: list[Any] = []
    inbound = Inbound(table, {t: queued.append for t in table}, lambda frame: "fuzz", "fuzz",
                      {t: queued.append for t in tasks["cols"]})
    try:
        decode_frame(data)
    except ValueError as exc:
        _message(exc)
    n = inbound.take([data])
    counted = sum(q.n if isinstance(q, ColumnBatch) else 1 for q in queued)
    if n != counted:
        raise AssertionError(f"take returned {n} for {counted} tuples queued")
    for q in queued:  # only checked tuples: int ids, values a list of the stream's length
        if not (type(q.root) is int and type(q.edge) is int
                and (isinstance(q, ColumnBatch) or type(q.values) is list)):
            raise AssertionError(f"an unchecked tuple was queued: {q!r:.200}")
    mid, src = tasks["mid"][0], tasks["src"][0]
    good = msgpack.packb([[mid, "default", src, 0, 0, None, ["w", 1]]])
    before = len(queued)
    if inbound.take([good]) != 1 or len(queued) != before + 1:
        raise AssertionError("a valid tuple after the fuzzed frame was not queued")


# -- RPC (rpc/codec.py, rpc/methods.py) ---------------------------------------------------------

@cache
def _nimbus_methods() -> MethodTable:
    """The real Nimbus RPC surface (signatures only: nothing is called)."""
    from stormpy.nimbus.handler import NimbusHandler
    return MethodTable(NimbusHandler.__new__(NimbusHandler))


def rpc_frames(data: bytes) -> None:
    """A request frame to an RPC server (decoded, then bound to Nimbus's methods the way the
    server's I/O thread does) and a response frame to a client: only InvalidRequestError /
    RpcError, each naming the problem."""
    peek_request_id(data)
    try:
        request = decode_request(data)
    except InvalidRequestError as exc:
        _message(exc)
    else:
        try:
            _nimbus_methods().bind(request.method, request.args)
        except InvalidRequestError as exc:
            _message(exc)
    try:
        response = decode_response(data)
    except RpcError as exc:
        _message(exc)
    else:
        try:
            response.unwrap()
        except RpcError:
            pass


@cache
def _nimbus_handler() -> tuple[Any, MethodTable]:
    """A Nimbus handler over the unit tests' fake cluster state (no ZooKeeper), with its real
    topology manager, bundle store, upload and download managers."""
    from pathlib import Path

    from nimbus_fakes import FakeClusterState, SimClock, staged_bundle

    from stormpy.nimbus.downloads import DownloadManager
    from stormpy.nimbus.handler import NimbusHandler
    from stormpy.nimbus.localdirs import NimbusDirs
    from stormpy.nimbus.store import BundleStore
    from stormpy.nimbus.topologies import TopologyManager
    from stormpy.nimbus.uploads import UploadManager
    from wordcount import build
    work = tempfile.mkdtemp(prefix="stormpy-fuzz-nimbus-")
    atexit.register(shutil.rmtree, work, True)
    dirs = NimbusDirs(Path(work) / "local")
    dirs.ensure()
    clock = SimClock()
    manager = TopologyManager(FakeClusterState(), BundleStore(dirs), {}, clock=clock)  # type: ignore[arg-type]
    uploads = UploadManager(dirs, max_bundle_bytes=1_000_000, expiration_secs=600,
                            chunk_size=4096, clock=clock, max_sessions=4,
                            max_sessions_per_client=4, idle_secs=30)
    downloads = DownloadManager(chunk_size=4096, expiration_secs=600, clock=clock)
    handler = NimbusHandler(manager, uploads, downloads, nimbus_info=lambda: {"host": "h", "port": 1})
    # a running topology "wc" for the calls that name one (kill, rebalance, info, files...)
    manager.submit("wc", staged_bundle(Path(work)), build(2).create_topology(), {})
    return handler, MethodTable(handler)


def rpc_calls(data: bytes) -> None:
    """A call's arguments as a peer sends them, run by the real Nimbus handler: the call
    answers, or raises an
    RpcError subclass naming what was wrong (never a TypeError or KeyError, which the server
    would report as an internal error). ``data`` is ``method name, NUL, msgpack map``; an
    unknown name picks a method by its bytes."""
    handler, table = _nimbus_handler()
    names = table.names
    head, _, packed = data.partition(b"\x00")
    method = head.decode("utf-8", "replace")
    if method not in names:
        method = names[sum(head) % len(names)]
    try:
        args = msgpack.unpackb(packed, raw=False, strict_map_key=False)
    except Exception:  # noqa: BLE001 - not a msgpack document: arguments made from the bytes
        args = None
    if not isinstance(args, dict) or not all(isinstance(k, str) for k in args):
        args = _arguments(_parameters(handler, method), packed)
    try:
        call = table.bind(method, args)
    except InvalidRequestError as exc:
        _message(exc)
        return
    try:
        call()
    except RpcError as exc:
        _message(exc)


def _parameters(handler: Any, method: str) -> list[str]:
    import inspect
    for attr in dir(type(handler)):
        func = getattr(type(handler), attr)
        if getattr(func, "__stormpy_rpc_name__", None) == method:
            return [p for p in inspect.signature(func).parameters if p != "self"]
    return []


def _value(kind: int, raw: bytes) -> Any:
    """A value of the kind a peer might send in an argument's place."""
    text = raw.decode("utf-8", "replace")
    number = int.from_bytes(raw[:9] or b"\0", "little", signed=True)
    return [None, number, -abs(number), float(number) / 7, text, raw, [text, number],
            {text: number}, True, float("nan"), 2 ** 70, {"components": {text: raw}}][kind % 12]


def _arguments(params: list[str], data: bytes) -> dict[str, Any]:
    """Each parameter given (or left out) a value made from the next piece of ``data``."""
    args: dict[str, Any] = {}
    pieces = data.split(b"\x01")
    for name, piece in zip(params, pieces, strict=False):
        if piece[:1] != b"\xff":  # left out
            args[name] = _value(piece[0] if piece else 0, piece[1:])
    return args


# -- bundles (bundle/verify.py, bundle/manifest.py) ---------------------------------------------

_BUNDLE_PATH = os.path.join(tempfile.gettempdir(), f"stormpy-fuzz-bundle-{os.getpid()}.zip")


def _structured_bundle(data: bytes) -> bytes:
    """A zip whose entry names, contents and manifest text come from ``data`` (random bytes are
    rarely a zip; this reaches the entry and manifest checks)."""
    parts = data.split(b"\x00")
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr(MANIFEST_NAME, parts[0])
        for i in range(1, len(parts) - 1, 2):
            name = parts[i].decode("utf-8", "replace") or "x"
            zf.writestr(name, parts[i + 1])
    return buf.getvalue()


def bundle(data: bytes) -> None:
    """A topology bundle as uploaded (raw bytes, or a zip built from them when the first byte is
    odd) and a manifest on its own: only BundleError, naming the entry."""
    raw = data[1:] if data[:1] and data[0] % 2 == 0 else _structured_bundle(data[1:])
    with open(_BUNDLE_PATH, "wb") as f:
        f.write(raw)
    try:
        for check in (read_manifest, verify_bundle):
            try:
                check(_BUNDLE_PATH)
            except BundleError as exc:
                _message(exc)
    finally:
        os.unlink(_BUNDLE_PATH)
    try:
        Manifest.from_json(data)
    except BundleError as exc:
        _message(exc)


# -- multilang (multilang/_serializers.py, multilang/_protocol.py) --------------------------------

def _commands(decoder_messages: list[Any]) -> None:
    for msg in decoder_messages:
        for table in (BOLT_COMMANDS, SPOUT_COMMANDS):
            try:
                check_command(msg, table)
            except ProtocolError as exc:
                _message(exc)


def multilang(data: bytes) -> None:
    """A subprocess's output, in JSON and in msgpack framing, fed in two chunks as it may arrive
    from a pipe, then checked as a bolt's and a spout's command: only GarbageError /
    ProtocolError. A decoder that refused garbage is replaced (the component restarts its
    subprocess) and a fresh one reads a valid message."""
    cut = data[0] if data else 0
    for codec in (JsonCodec(), MsgpackCodec()):
        decoder = codec.decoder()
        try:
            _commands(decoder.feed(data[1:1 + cut]))
            _commands(decoder.feed(data[1 + cut:]))
        except GarbageError as exc:
            _message(exc)
        fresh = codec.decoder()
        if fresh.feed(codec.encode({"command": "sync"})) != [{"command": "sync"}]:
            raise AssertionError(f"a fresh {codec.name} decoder did not read a valid message")


# -- the UI's REST inputs (ui/_app.py, ui/_windows.py) --------------------------------------------

_UI_PATHS = ("/api/v1/topology/{a}", "/api/v1/topology/{a}/component/{b}",
             "/api/v1/topology/{a}/visualization", "/api/v1/topology/{a}/graph.svg",
             "/api/v1/topology-workers/{a}", "/api/v1/topology/{a}/activate",
             "/api/v1/topology/{a}/rebalance/{b}", "/api/v1/topology/{a}/kill/{b}",
             "/api/v1/cluster/summary", "/api/v1/topology/summary", "/{a}")
_TOKEN = "fuzz-token"


class _FakeNimbus:
    """Answers like a Nimbus with one topology ``wc``; refuses what Nimbus refuses."""

    address = "127.0.0.1:1"

    def call(self, method: str, **args: Any) -> Any:
        from stormpy.rpc.errors import InvalidRequestError as Invalid
        from stormpy.rpc.errors import NotFoundError
        if method == "get_cluster_info":
            return {"nimbus": {"host": "h", "port": 1, "version": "0", "uptime_secs": 1.0},
                    "supervisors": [], "topologies": []}
        if method in ("get_daemon_stats", "get_nimbus_conf"):
            return {}
        if args.get("name") != "wc":
            raise NotFoundError(f"no topology {args.get('name')!r}")
        if method in ("rebalance", "kill", "activate", "deactivate"):
            if method == "rebalance" and args.get("num_workers", 1) > 50:
                raise Invalid("too many workers")
            return None
        raise NotFoundError(f"nothing for {method}")

    def close(self) -> None:
        pass


@cache
def _ui_client() -> Any:
    from starlette.testclient import TestClient

    from stormpy.ui._app import create_app
    from stormpy.ui._source import UiBackend
    backend = UiBackend({"nimbus.rpc.auth.token": _TOKEN}, state_factory=lambda: None)  # type: ignore
    backend.client = _FakeNimbus()  # type: ignore[assignment]
    return TestClient(create_app(backend, clock=lambda: 10.0), raise_server_exceptions=True)


def ui_rest(data: bytes) -> None:
    """An HTTP request to the UI built from ``data``: path segments, query, method, body,
    token. The answer is never a 5xx; an error answer from the API is Storm's JSON error
    document; the UI still answers the cluster summary afterwards."""
    client = _ui_client()
    parts = data.split(b"\x00")
    pick = parts[0][0] if parts[0] else 0
    seg = [p.decode("utf-8", "replace") for p in parts[1:4]] + ["", "", ""]
    from urllib.parse import quote
    path = _UI_PATHS[pick % len(_UI_PATHS)].format(a=quote(seg[0] or "wc", safe=""),
                                                   b=quote(seg[1] or "1", safe=""))
    query = {"window": seg[2]} if pick & 0x10 else None
    body = parts[4] if len(parts) > 4 else b""
    headers = {"Authorization": f"Bearer {_TOKEN}"} if pick & 0x20 else {}
    headers["X-Requested-With"] = "XMLHttpRequest"
    method = "POST" if pick & 0x40 else "GET"
    answer = client.request(method, path, params=query, content=body, headers=headers)
    if answer.status_code >= 500:
        raise AssertionError(f"{method} {path} answered {answer.status_code}: {answer.text[:200]}")
    if answer.status_code >= 400 and path.startswith("/api/") and answer.status_code != 405:
        doc = answer.json()
        if not (isinstance(doc, dict) and doc.get("error") and doc.get("errorMessage")):
            raise AssertionError(f"{method} {path}: error answer {doc!r} is not Storm's error document")
    if client.get("/api/v1/cluster/summary").status_code != 200:
        raise AssertionError("the UI stopped answering")


TARGETS: dict[str, Target] = {
    "worker_frames": worker_frames,
    "rpc_frames": rpc_frames,
    "rpc_calls": rpc_calls,
    "bundle": bundle,
    "multilang": multilang,
    "ui_rest": ui_rest,
}
