"""Nimbus with ``nimbus.rpc.auth.token`` (in this process, real ZooKeeper): requests without the
token or with a wrong one are refused with a typed AuthorizationError while the daemon keeps
serving, and every client built from config sends it: NimbusClient.from_config, the CLI and the
supervisor's bundle downloader."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from stormpy.bundle import build_bundle
from stormpy.cli.main import cli
from stormpy.cli.topology_loader import load_topology
from stormpy.client import NimbusClient
from stormpy.config import merged
from stormpy.nimbus import Nimbus
from stormpy.rpc.errors import AuthorizationError
from stormpy.supervisor import SupervisorDirs
from stormpy.supervisor.download import BundleDownloader, DownloadError

pytestmark = [pytest.mark.timeout(120), pytest.mark.zookeeper]

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
TOKEN = "s3cret-token"


@pytest.fixture
def secured(zookeeper: Any, zk_root: str, tmp_path: Path) -> Iterator[tuple[Nimbus, dict[str, Any]]]:
    """A Nimbus requiring TOKEN, and the config (with its port) clients are built from."""
    conf: dict[str, Any] = {
        "storm.zookeeper.servers": [zookeeper.connect_string], "storm.zookeeper.root": zk_root,
        "storm.local.dir": str(tmp_path / "nimbus"), "nimbus.thrift.port": 0,
        "nimbus.rpc.auth.token": TOKEN, "nimbus.rpc.handler.threads": 2,
        "nimbus.rpc.timeout.secs": 7, "nimbus.rpc.retries": 0,
    }
    nimbus = Nimbus(conf).start()
    try:
        yield nimbus, {**conf, "nimbus.thrift.port": nimbus.port}
    finally:
        nimbus.stop()


def without_token(conf: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in conf.items() if k != "nimbus.rpc.auth.token"}


def test_requests_without_the_right_token_are_refused_and_nimbus_keeps_serving(
        secured: tuple[Nimbus, dict[str, Any]]) -> None:
    nimbus, conf = secured
    with NimbusClient("127.0.0.1", nimbus.port, timeout_secs=10) as anonymous, \
            NimbusClient("127.0.0.1", nimbus.port, timeout_secs=10, auth_token="wrong") as wrong, \
            NimbusClient.from_config(conf) as good:
        assert (good.rpc.timeout_secs, good.rpc.retries) == (7, 0)  # from nimbus.rpc.* keys
        for _ in range(2):  # refusals leave the daemon serving, again and again
            with pytest.raises(AuthorizationError,
                               match=r"refused 'get_cluster_info': .*no valid auth token \(it sent none\)"):
                anonymous.cluster_info()
            with pytest.raises(AuthorizationError, match="does not match the server's"):
                wrong.ping()
            with pytest.raises(AuthorizationError, match="begin_upload"):
                wrong.call("begin_upload", size=10)
            assert "supervisors" in good.cluster_info()
            assert good.ping()
        # The error is typed on the wire (not a timeout, not a generic RpcError).
        with pytest.raises(AuthorizationError) as info:
            anonymous.topology_info("anything")
        assert info.value.remote_type == "AuthorizationError"


def test_cli_sends_the_token_of_its_config(secured: tuple[Nimbus, dict[str, Any]]) -> None:
    nimbus, _ = secured
    address = f"127.0.0.1:{nimbus.port}"
    refused = CliRunner().invoke(cli, ["list", "--nimbus", address], catch_exceptions=False)
    assert refused.exit_code == 1, refused.output
    assert "AuthorizationError" in refused.output and "nimbus.rpc.auth.token" in refused.output
    allowed = CliRunner().invoke(cli, ["list", "--nimbus", address, "-c", f"nimbus.rpc.auth.token={TOKEN}"],
                                 catch_exceptions=False)
    assert allowed.exit_code == 0, allowed.output


def test_supervisor_downloads_only_with_the_token(secured: tuple[Nimbus, dict[str, Any]],
                                                  tmp_path: Path) -> None:
    _, conf = secured
    src = tmp_path / "src"
    src.mkdir()
    shutil.copy(EXAMPLES / "wordcount.py", src / "wordcount.py")
    bundle = build_bundle(src, tmp_path / "wc.zip")
    spec = load_topology(src, "wordcount:topology").spec.to_doc()
    with NimbusClient.from_config(conf) as client:
        topology_id = client.submit("wc", bundle.path, spec, {"topology.workers": 1})
    dirs = SupervisorDirs(tmp_path / "supervisor", "sup-1")

    with pytest.raises(DownloadError, match=r"refused this supervisor: .*nimbus\.rpc\.auth\.token"):
        BundleDownloader(merged(without_token(conf)), dirs).download(topology_id)
    assert not dirs.is_downloaded(topology_id)

    path = BundleDownloader(merged(conf), dirs).download(topology_id)
    assert dirs.is_downloaded(topology_id) and (path / "code" / "wordcount.py").is_file()
