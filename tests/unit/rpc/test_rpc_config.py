"""The ``nimbus.rpc.*`` keys reach the clients built from config (no network needed)."""

from __future__ import annotations

from pathlib import Path

import pytest

from stormpy.client import NimbusClient
from stormpy.config import DEFAULTS, merged, parse_overrides, rpc_auth_token
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
