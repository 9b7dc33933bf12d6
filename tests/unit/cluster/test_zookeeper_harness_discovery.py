"""Finding ZooKeeper and Java, without starting anything."""

from __future__ import annotations

from pathlib import Path

import pytest

from stormpy.cluster.zkserver import (
    INSTALL_HINT,
    ZooKeeperNotFound,
    ZooKeeperServer,
    find_zookeeper_classpath,
)


def test_nothing_installed_gives_an_install_hint(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ZOOKEEPER_HOME", raising=False)
    with pytest.raises(ZooKeeperNotFound) as info:
        find_zookeeper_classpath(java_dir=tmp_path)
    assert "apt-get install zookeeper" in str(info.value) and INSTALL_HINT in str(info.value)


def test_debian_layout_with_missing_dependencies_is_named(tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ZOOKEEPER_HOME", raising=False)
    (tmp_path / "zookeeper.jar").write_bytes(b"")
    with pytest.raises(ZooKeeperNotFound, match="zookeeper-jute.jar"):
        find_zookeeper_classpath(java_dir=tmp_path)
    for name in ("zookeeper-jute.jar", "slf4j-api.jar", "netty-handler.jar", "netty-transport.jar",
                 "slf4j-simple.jar"):
        (tmp_path / name).write_bytes(b"")
    assert find_zookeeper_classpath(java_dir=tmp_path) == [
        str(tmp_path / "zookeeper.jar"), str(tmp_path / "slf4j-simple.jar")]


def test_zookeeper_home_release_layout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ZOOKEEPER_HOME", str(tmp_path))
    with pytest.raises(ZooKeeperNotFound, match=f"ZOOKEEPER_HOME={tmp_path} holds no zookeeper"):
        find_zookeeper_classpath()
    (tmp_path / "lib").mkdir()
    (tmp_path / "conf").mkdir()
    for name in ("zookeeper-3.8.4.jar", "zookeeper-jute-3.8.4.jar", "logback-classic-1.2.13.jar"):
        (tmp_path / "lib" / name).write_bytes(b"")
    classpath = find_zookeeper_classpath()
    assert classpath[0] == str(tmp_path / "conf")
    assert str(tmp_path / "lib" / "zookeeper-3.8.4.jar") in classpath


def test_server_properties_before_start() -> None:
    server = ZooKeeperServer(port=21999)
    assert server.connect_string == "127.0.0.1:21999"
    assert not server.running and server.pid is None
    with pytest.raises(RuntimeError, match="after start"):
        _ = ZooKeeperServer().port
    server.stop()  # stopping a server that never started is harmless
