"""The ``nimbus.rpc.*`` keys reach the clients built from config (no network needed)."""

from __future__ import annotations

from pathlib import Path

import pytest
import zmq

from stormpy.client import NimbusClient
from stormpy.config import DEFAULTS, SettingError, merged, parse_overrides, rpc_auth_token
from stormpy.rpc.curve import (
    PUBLIC_KEY,
    SECRET_KEY_FILE,
    handshake_failure,
    handshake_refused,
    server_public_key,
    server_secret_key,
    write_secret_key_file,
)
from stormpy.supervisor import SupervisorDirs
from stormpy.supervisor.download import BundleDownloader


@pytest.mark.parametrize(("value", "expected"), [(None, None), ("", None), ("abc", "abc"), (1234, "1234")])
def test_rpc_auth_token(value: object, expected: str | None) -> None:
    assert rpc_auth_token({"nimbus.rpc.auth.token": value}) == expected


def test_numeric_token_from_the_command_line_is_its_text() -> None:
    assert rpc_auth_token(parse_overrides(["nimbus.rpc.auth.token=007"])) == "7"  # YAML reads a number
    assert rpc_auth_token(parse_overrides(["nimbus.rpc.auth.token='007'"])) == "007"


def test_auth_is_off_and_handlers_are_parallel_by_default() -> None:
    assert DEFAULTS["nimbus.rpc.auth.token"] is None
    assert DEFAULTS["nimbus.rpc.handler.threads"] >= 1


def test_nimbus_client_from_config_uses_timeout_retries_and_token() -> None:
    conf = {"nimbus.host": "127.0.0.1", "nimbus.thrift.port": 1, "nimbus.rpc.timeout.secs": 4.5,
            "nimbus.rpc.retries": 3, "nimbus.rpc.auth.token": "t"}
    with NimbusClient.from_config(conf) as client:
        assert (client.rpc.timeout_secs, client.rpc.retries, client.rpc._auth) == (4.5, 3, "t")
    with NimbusClient.from_config(conf, timeout_secs=1.0, auth_token=None) as client:
        assert (client.rpc.timeout_secs, client.rpc.retries, client.rpc._auth) == (1.0, 3, None)
    with NimbusClient.from_config({}) as client:
        assert client.rpc.timeout_secs == DEFAULTS["nimbus.rpc.timeout.secs"]
        assert client.rpc.retries == DEFAULTS["nimbus.rpc.retries"]
        assert client.rpc._auth is None


def test_bundle_downloader_client_uses_timeout_retries_and_token(tmp_path: Path) -> None:
    conf = merged({"nimbus.rpc.timeout.secs": 12, "nimbus.rpc.retries": 2, "nimbus.rpc.auth.token": "t"})
    downloader = BundleDownloader(conf, SupervisorDirs(tmp_path, "sup"))
    client = downloader._default_client("127.0.0.1", 1)
    try:
        assert (client.timeout_secs, client.retries, client._auth) == (12.0, 2, "t")
    finally:
        client.close()


def test_curve_keys_are_read_from_their_settings(tmp_path: Path) -> None:
    key_file = tmp_path / "nimbus.key"
    public = write_secret_key_file(key_file)
    assert key_file.stat().st_mode & 0o777 == 0o600  # the secret is readable by its owner only
    with pytest.raises(FileExistsError):
        write_secret_key_file(key_file)  # never overwrites a key clients already pinned
    secret = server_secret_key({SECRET_KEY_FILE: str(key_file)})
    assert secret is not None and zmq.curve_public(secret) == public
    assert server_secret_key({}) is None and server_secret_key({SECRET_KEY_FILE: ""}) is None
    assert server_public_key({PUBLIC_KEY: f"  {public.decode()}\n"}) == public  # text, trimmed
    assert server_public_key({PUBLIC_KEY: public}) == public  # bytes as they are
    assert server_public_key({}) is None and server_public_key({PUBLIC_KEY: ""}) is None


@pytest.mark.parametrize(("value", "problem"), [
    ("a" * 39, "must hold a CURVE key in Z85 text (40 characters)"),
    (b"a" * 39, "must hold a CURVE key in Z85 text (40 characters)"),
    ("\u00e9" * 41, "must hold a CURVE key in Z85 text (40 characters)"),
    (40, "must hold a CURVE key in Z85 text (40 characters)"),
    ("~" * 40, "is not valid Z85 text (a CURVE key)"),
])
def test_a_bad_curve_key_is_a_setting_error_naming_the_setting(tmp_path: Path, value: object,
                                                              problem: str) -> None:
    with pytest.raises(SettingError) as info:
        server_public_key({PUBLIC_KEY: value})
    assert str(info.value) == f"{PUBLIC_KEY}: {problem}"
    if isinstance(value, str):
        key_file = tmp_path / "bad.key"
        key_file.write_text(value)
        with pytest.raises(SettingError) as info:
            server_secret_key({SECRET_KEY_FILE: str(key_file)})
        assert str(info.value) == f"{SECRET_KEY_FILE}: {problem}"


def test_an_unreadable_secret_key_file_is_a_setting_error_naming_it(tmp_path: Path) -> None:
    missing = tmp_path / "missing.key"
    with pytest.raises(SettingError) as info:
        server_secret_key({SECRET_KEY_FILE: str(missing)})
    assert str(info.value) == f"{SECRET_KEY_FILE}: cannot read {missing}: No such file or directory"


def test_what_a_handshake_event_says_of_the_key() -> None:
    failed = (zmq.EVENT_HANDSHAKE_FAILED_NO_DETAIL, zmq.EVENT_HANDSHAKE_FAILED_PROTOCOL,
              zmq.EVENT_HANDSHAKE_FAILED_AUTH)
    mismatch = zmq.PROTOCOL_ERROR_ZMTP_MECHANISM_MISMATCH
    for curve in (True, False):
        assert handshake_refused({"event": zmq.EVENT_HANDSHAKE_SUCCEEDED, "value": 0}, curve) is False
        assert handshake_refused({"event": zmq.EVENT_CONNECTED, "value": 0}, curve) is None
    for kind in failed:  # a CURVE client: any failed handshake is a refusal
        assert handshake_refused({"event": kind, "value": 0}, True) is True
    # a plain client: only a server that requires another mechanism refuses it for want of a key
    assert handshake_refused({"event": zmq.EVENT_HANDSHAKE_FAILED_PROTOCOL, "value": mismatch}, False)
    assert handshake_refused({"event": zmq.EVENT_HANDSHAKE_FAILED_PROTOCOL, "value": mismatch + 1},
                             False) is None
    assert handshake_refused({"event": zmq.EVENT_HANDSHAKE_FAILED_AUTH, "value": mismatch}, False) is None
    assert handshake_failure("Nimbus", "h:1", False) == (
        f"the handshake with Nimbus at h:1 failed: it requires CURVE; set {PUBLIC_KEY} to its public key")
