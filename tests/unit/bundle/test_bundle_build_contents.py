"""What a user's bundle contains: ``.stormpyignore``, ``exclude``, followed links, the listing in
BundleInfo, and the modes stored in the zip."""

from __future__ import annotations

import os
import stat
import zipfile
from pathlib import Path

import pytest

from stormpy.bundle import (
    IGNORE_FILE,
    MANIFEST_NAME,
    BundleError,
    BundleInfo,
    build_bundle,
    iter_bundle_files,
)


def tree(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def names(root: Path, **kwargs: object) -> list[str]:
    return [rel for rel, _ in iter_bundle_files(root, **kwargs)]  # type: ignore[arg-type]


def test_stormpyignore_follows_gitignore_rules(tmp_path: Path) -> None:
    root = tree(tmp_path / "src", {
        IGNORE_FILE: "# comment\n*.log\n!keep.log\nbuild/\n/top.txt\na_ignored/\nlogs/\n!logs/keep.txt\n",
        "a.log": "", "keep.log": "", "app.py": "", "top.txt": "", "sub/top.txt": "",
        "a_ignored/x.py": "", "build/out.py": "", "logs/keep.txt": "", "z/build": "file named build",
        "z/later.py": "",
    })
    assert names(root) == [IGNORE_FILE, "app.py", "keep.log", "sub/top.txt", "z/build", "z/later.py"]


def test_non_utf8_ignore_file_is_refused_naming_it(tmp_path: Path) -> None:
    root = tmp_path / "src"
    root.mkdir()
    (root / IGNORE_FILE).write_bytes(b"\xff\xfe*.log\n")
    with pytest.raises(BundleError, match=rf"cannot read {root / IGNORE_FILE}: "):
        names(root)


def test_non_ascii_ignore_patterns_are_read_as_utf8(tmp_path: Path) -> None:
    root = tree(tmp_path / "src", {IGNORE_FILE: "données/\n", "données/x.csv": "", "app.py": ""})
    assert names(root) == [IGNORE_FILE, "app.py"]


def test_excluded_paths_are_left_out_and_reported(tmp_path: Path) -> None:
    root = tree(tmp_path / "src", {"a_logs/w.log": "", "b/app.py": "", "a_secret.txt": "", "c.py": ""})
    excluded: list[str] = []
    found = names(root, exclude=[(root / "a_logs").resolve(), (root / "a_secret.txt").resolve()],
                  excluded=excluded)
    assert found == ["c.py", "b/app.py"]
    assert excluded == ["a_logs"]
    assert names(root, exclude=(root / "a_logs").resolve()) == ["a_secret.txt", "c.py", "b/app.py"]


def test_linked_directories_are_followed_once(tmp_path: Path) -> None:
    outside = tree(tmp_path / "outside", {"lib.py": "x"})
    root = tree(tmp_path / "src", {"a/x.py": "", "c/y.py": ""})
    (root / "b").symlink_to(root / "a", target_is_directory=True)
    (root / "ext").symlink_to(outside, target_is_directory=True)
    assert names(root) == ["a/x.py", "c/y.py", "ext/lib.py"]


def test_special_files_are_refused_naming_them(tmp_path: Path) -> None:
    root = tree(tmp_path / "src", {"app.py": ""})
    os.mkfifo(root / "pipe")
    with pytest.raises(BundleError) as caught:
        names(root)
    assert str(caught.value) == "cannot bundle pipe: not a regular file"


def test_build_lists_files_sizes_and_exclusions(tmp_path: Path) -> None:
    root = tree(tmp_path / "src", {"a.py": "aa", "logs/x.log": "log", "pkg/m.py": "m", "pkg/n.py": "n"})
    big = bytes(range(256)) * 6000  # more than one 1 MiB read
    (root / "data.bin").write_bytes(big)
    info = build_bundle(root, tmp_path / "deep" / "er" / "t.zip", exclude=[root / "logs"])
    assert isinstance(info, BundleInfo)
    assert info.files == (("a.py", 2), ("data.bin", len(big)), ("pkg/m.py", 1), ("pkg/n.py", 1))
    assert info.excluded == ("logs",)
    assert info.content_bytes == 4 + len(big)
    assert info.largest() == [("data.bin", len(big)), ("a.py", 2), ("pkg/m.py", 1)]
    assert info.largest(1) == [("data.bin", len(big))]
    assert info.largest(10)[-2:] == [("pkg/m.py", 1), ("pkg/n.py", 1)]
    with zipfile.ZipFile(info.path) as zf:
        assert zf.read("data.bin") == big


def test_zip_entries_record_unix_modes_and_a_fixed_date(tmp_path: Path) -> None:
    root = tree(tmp_path / "src", {"run.sh": "#!/bin/sh\n", "app.py": ""})
    (root / "run.sh").chmod(0o700)
    info = build_bundle(root, tmp_path / "t.zip")
    with zipfile.ZipFile(info.path) as zf:
        modes = {i.filename: i.external_attr >> 16 for i in zf.infolist()}
        assert {i.date_time for i in zf.infolist()} == {(1980, 1, 1, 0, 0, 0)}
    assert modes == {"app.py": stat.S_IFREG | 0o644, "run.sh": stat.S_IFREG | 0o755,
                     MANIFEST_NAME: stat.S_IFREG | 0o644}


def test_reserved_manifest_name_message(tmp_path: Path) -> None:
    root = tree(tmp_path / "src", {MANIFEST_NAME: "{}"})
    with pytest.raises(BundleError) as caught:
        build_bundle(root, tmp_path / "t.zip")
    assert str(caught.value) == (f"cannot bundle {root}: it contains {MANIFEST_NAME} at its root, "
                                 "a name reserved for the bundle manifest")
    assert not list(tmp_path.glob("*.zip")) and not list(tmp_path.glob(".*.tmp"))


def test_an_unwritable_output_reports_the_open_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tree(tmp_path / "src", {"app.py": ""})

    def refuse(*_args: object, **_kwargs: object) -> zipfile.ZipFile:
        raise PermissionError("output directory is read-only")

    monkeypatch.setattr(zipfile, "ZipFile", refuse)
    with pytest.raises(PermissionError, match="read-only"):
        build_bundle(root, tmp_path / "out" / "t.zip")
    assert list((tmp_path / "out").iterdir()) == []


def test_largest_breaks_ties_by_name_whatever_the_walk_order(tmp_path: Path) -> None:
    info = BundleInfo(path=tmp_path / "t.zip", sha256="0" * 64, size=0,
                      files=(("z.py", 5), ("pkg/b.py", 5), ("big.bin", 9), ("a/c.py", 5)))
    assert info.largest() == [("big.bin", 9), ("a/c.py", 5), ("pkg/b.py", 5)]
