"""What ``stormpy jar`` says it bundled (``cli/bundle_report.py``), exactly: file count in the
right number, sizes in B/KiB/MiB/GiB, the three largest files, and the left-out directories with
the setting naming each; and which directories a cluster run writes (``cluster_dirs``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from stormpy.bundle import BundleInfo
from stormpy.cli.bundle_report import cluster_dirs, describe_bundle, human_bytes


def info(files: tuple[tuple[str, int], ...], excluded: tuple[str, ...] = ()) -> BundleInfo:
    return BundleInfo(Path("b.zip"), "0" * 64, 1, files, excluded)


@pytest.mark.parametrize(("n", "text"), [
    (0, "0 B"), (512, "512 B"), (1023, "1023 B"), (1024, "1.0 KiB"), (1536, "1.5 KiB"),
    (1024 * 1024 - 1, "1024.0 KiB"), (1024 ** 2, "1.0 MiB"), (5 * 1024 ** 3, "5.0 GiB"),
    (3 * 1024 ** 4, "3072.0 GiB")])
def test_human_bytes(n: int, text: str) -> None:
    assert human_bytes(n) == text


def test_one_file_is_said_in_the_singular() -> None:
    assert describe_bundle(info((("topo.py", 100),))) == \
        "bundled 1 file, 100 B (largest: topo.py 100 B)"


def test_an_empty_bundle() -> None:
    assert describe_bundle(info(())) == "bundled 0 files, 0 B"


def test_the_three_largest_and_the_left_out_directories_with_their_settings() -> None:
    files = (("a.py", 10), ("data/big.csv", 3 * 1024), ("data/mid.csv", 2048), ("b.py", 2048))
    text = describe_bundle(info(files, ("stormpy-local", "logs", "zk")),
                           {"stormpy-local": "storm.local.dir", "zk": "dev.zookeeper.path"})
    assert text == ("bundled 4 files, 7.0 KiB (largest: data/big.csv 3.0 KiB, b.py 2.0 KiB, "
                    "data/mid.csv 2.0 KiB); left out stormpy-local/ (storm.local.dir), logs/, "
                    "zk/ (dev.zookeeper.path)")


def test_left_out_directories_without_their_settings() -> None:
    assert describe_bundle(info((("a.py", 1),), ("out",))) == \
        "bundled 1 file, 1 B (largest: a.py 1 B); left out out/"


def test_cluster_dirs_resolve_the_settings_against_the_current_directory(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    root = tmp_path.resolve()
    assert cluster_dirs({"storm.local.dir": "state"}) == {
        root / "state": "storm.local.dir", root / "state" / "logs": "storm.log.dir"}
    assert cluster_dirs({"storm.local.dir": "state", "storm.log.dir": "/var/log/s",
                         "dev.zookeeper.path": "zk"}) == {
        root / "state": "storm.local.dir", Path("/var/log/s"): "storm.log.dir",
        root / "zk": "dev.zookeeper.path"}


def test_a_zookeeper_path_equal_to_another_dir_keeps_the_first_setting(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    dirs = cluster_dirs({"storm.local.dir": "state", "dev.zookeeper.path": "state"})
    assert dirs[tmp_path.resolve() / "state"] == "storm.local.dir"
    assert len(dirs) == 2
    assert len(cluster_dirs({"storm.local.dir": "s", "dev.zookeeper.path": ""})) == 2


def test_human_bytes_takes_fractional_sizes() -> None:
    assert human_bytes(1023.4) == "1023 B"
    assert human_bytes(1.25 * 1024 ** 2) == "1.2 MiB"
    assert human_bytes(1024 ** 3 - 1) == "1024.0 MiB"
