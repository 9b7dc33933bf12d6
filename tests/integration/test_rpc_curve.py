"""Nimbus RPC over CURVE (rpc/curve.py) with the token on top, on RpcServer in this process: the
token and arguments are not on the wire (they are without CURVE), a wrong token, a wrong server
key and a client without CURVE are each refused with an AuthorizationError saying why, and the
server keeps serving."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest
import zmq
from wire_tap import TcpTap

from stormpy.config import SettingError
from stormpy.rpc import RpcClient, RpcServer
from stormpy.rpc.curve import server_public_key, server_secret_key, write_secret_key_file
from stormpy.rpc.errors import AuthorizationError

pytestmark = pytest.mark.timeout(60)

TOKEN = "tok-93c1-never-on-the-wire"
ARGUMENT = "argument-5f2e-never-on-the-wire"


@pytest.fixture
def key_file(tmp_path: Path) -> tuple[Path, bytes]:
    path = tmp_path / "nimbus.key"
    return path, write_secret_key_file(path)


@pytest.fixture
def server(key_file: tuple[Path, bytes]) -> Iterator[RpcServer]:
    secret = server_secret_key({"nimbus.rpc.curve.secret.key.file": str(key_file[0])})
    with RpcServer("127.0.0.1", 0, methods={"echo": lambda value: value}, auth_token=TOKEN,
                   curve_secret_key=secret, name="curve-test") as srv:
        yield srv


def client(srv: RpcServer | int, *, token: str | None = TOKEN, key: bytes | None = None) -> RpcClient:
    port = srv if isinstance(srv, int) else srv.port
    return RpcClient("127.0.0.1", port, timeout_secs=20, retries=0, auth_token=token,
                     service="Nimbus", curve_server_key=key)


@pytest.mark.parametrize("curve", [False, True], ids=["plain", "curve"])
def test_a_capture_shows_the_token_only_without_curve(key_file: tuple[Path, bytes], curve: bool) -> None:
    secret = server_secret_key({"nimbus.rpc.curve.secret.key.file": str(key_file[0])}) if curve else None
    with RpcServer("127.0.0.1", 0, methods={"echo": lambda value: value}, auth_token=TOKEN,
                   curve_secret_key=secret) as srv:
        tap = TcpTap(srv.port)
        try:
            with client(tap.port, key=key_file[1] if curve else None) as c:
                assert c.call("echo", value=ARGUMENT) == ARGUMENT
            assert tap.captured  # the tap saw the exchange
            for secret_text in (TOKEN, ARGUMENT):
                assert (secret_text.encode() in tap.captured) is not curve
        finally:
            tap.close()


def test_the_right_key_and_token_are_served(server: RpcServer, key_file: tuple[Path, bytes]) -> None:
    with client(server, key=key_file[1]) as c:
        assert c.call("echo", value=[1, "two"]) == [1, "two"]


def test_a_wrong_token_is_refused_and_the_server_keeps_serving(
        server: RpcServer, key_file: tuple[Path, bytes]) -> None:
    with client(server, token="guess", key=key_file[1]) as c, \
            pytest.raises(AuthorizationError, match="token it sent does not match"):
        c.call("echo", value=1)
    with client(server, key=key_file[1]) as c:
        assert c.call("echo", value=2) == 2


def test_a_wrong_server_key_is_refused_clearly(server: RpcServer, key_file: tuple[Path, bytes]) -> None:
    wrong, _ = zmq.curve_keypair()
    with client(server, key=wrong) as c, \
            pytest.raises(AuthorizationError,
                          match="CURVE handshake with Nimbus .* nimbus.rpc.curve.public.key"):
        c.call("echo", value=1)
    with client(server, key=key_file[1]) as c:
        assert c.call("echo", value=3) == 3


def test_a_client_without_curve_is_refused_clearly(server: RpcServer, key_file: tuple[Path, bytes]) -> None:
    with client(server) as c, pytest.raises(AuthorizationError, match="requires CURVE"):
        c.call("echo", value=1)
    with client(server, key=key_file[1]) as c:
        assert c.call("echo", value=4) == 4


def test_keys_and_key_files_are_checked(tmp_path: Path, key_file: tuple[Path, bytes]) -> None:
    path, public = key_file
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert zmq.curve_public(server_secret_key({"nimbus.rpc.curve.secret.key.file": str(path)}) or b"") \
        == public
    assert server_public_key({"nimbus.rpc.curve.public.key": public.decode()}) == public
    with pytest.raises(FileExistsError):
        write_secret_key_file(path)
    with pytest.raises(SettingError, match="nimbus.rpc.curve.secret.key.file.*cannot read"):
        server_secret_key({"nimbus.rpc.curve.secret.key.file": str(tmp_path / "missing")})
    with pytest.raises(SettingError, match="nimbus.rpc.curve.public.key"):
        server_public_key({"nimbus.rpc.curve.public.key": "not-a-key"})


def test_curve_keygen_writes_the_secret_and_prints_the_public_key(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from stormpy.cli.main import cli

    path = tmp_path / "nimbus.key"
    result = CliRunner().invoke(cli, ["curve-keygen", str(path)])
    assert result.exit_code == 0, result.output
    public = result.output.split("nimbus.rpc.curve.public.key: ")[1].strip().encode()
    secret = server_secret_key({"nimbus.rpc.curve.secret.key.file": str(path)})
    assert secret is not None and zmq.curve_public(secret) == public
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    again = CliRunner().invoke(cli, ["curve-keygen", str(path)])
    assert again.exit_code == 2 and "exists" in again.output
