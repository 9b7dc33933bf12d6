"""The manifest's format and validation, entry-name rules, and chunked hashing."""

from __future__ import annotations

import hashlib
import io
import json
from pathlib import Path

import pytest

import stormpy.bundle.hashing as hashing_module
import stormpy.bundle.manifest as manifest_module
from stormpy.bundle import BundleError, Manifest, check_entry_name, sha256_file, sha256_stream

DIGEST = "0" * 64


def doc(**fields: object) -> bytes:
    base: dict[str, object] = {"format": 1, "created": 5.0, "files": {"a.py": DIGEST}}
    base.update(fields)
    return json.dumps(base).encode()


@pytest.mark.parametrize(("name", "message"), [
    ("", "has an empty or NUL-containing name"),
    ("a\x00b", "has an empty or NUL-containing name"),
    ("/etc/passwd", "is an absolute path"),
    ("C:evil.py", "is an absolute path"),
    ("pkg\\mod.py", "contains a backslash"),
    ("a//b.py", "has an empty or '.' path component"),
    ("a/./b.py", "has an empty or '.' path component"),
])
def test_unsafe_names_are_refused_with_the_rule_they_break(name: str, message: str) -> None:
    with pytest.raises(BundleError) as caught:
        check_entry_name(name)
    assert str(caught.value) == f"bundle entry {name!r} {message}"


def test_manifest_json_layout_is_sorted_with_one_space_indent() -> None:
    text = Manifest(files={"b.py": DIGEST, "a.py": DIGEST}, created=2.5).to_json().decode()
    assert text == ('{\n "created": 2.5,\n "files": {\n  "a.py": "' + DIGEST + '",\n  "b.py": "'
                    + DIGEST + '"\n },\n "format": 1\n}')


def test_parsed_manifest_keeps_files_format_and_creation_time() -> None:
    parsed = Manifest.from_json(doc())
    assert parsed == Manifest(files={"a.py": DIGEST}, created=5.0, format=1)
    assert parsed.format == 1
    without_time = json.loads(doc())
    del without_time["created"]
    assert Manifest.from_json(json.dumps(without_time).encode()).created == 0.0


@pytest.mark.parametrize(("data", "message"), [
    (b"\xff\xfe", "M.json is not valid UTF-8 JSON: "),
    (b"[1]", "M.json must be a JSON object"),
    (doc(created="soon"), "M.json: 'created' must be a number"),
    (doc(created=True), "M.json: 'created' must be a number"),
    (doc(files=["a.py"]), "M.json: 'files' must be an object of path → sha256"),
    (doc(files={"MANIFEST.json": DIGEST}), "M.json lists itself under 'files'"),
])
def test_bad_manifests_are_refused_naming_the_file_and_the_field(data: bytes, message: str) -> None:
    with pytest.raises(BundleError) as caught:
        Manifest.from_json(data, where="M.json")
    assert str(caught.value).startswith(message)


def test_file_count_limit_is_inclusive(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(manifest_module, "MAX_FILES", 2)
    assert len(Manifest.from_json(doc(files={"a.py": DIGEST, "b.py": DIGEST})).files) == 2
    with pytest.raises(BundleError, match=r"lists 3 files; at most 2 are allowed"):
        Manifest.from_json(doc(files={"a.py": DIGEST, "b.py": DIGEST, "c.py": DIGEST}))


class RecordingStream(io.BytesIO):
    def __init__(self, data: bytes) -> None:
        super().__init__(data)
        self.asked: list[int | None] = []

    def read(self, size: int | None = -1, /) -> bytes:
        self.asked.append(size)
        return super().read(size)


def test_stream_hash_counts_every_byte_and_reads_bounded_chunks() -> None:
    data = bytes(range(256)) * 3 + b"tail"
    stream = RecordingStream(data)
    assert sha256_stream(stream, chunk_size=100) == (hashlib.sha256(data).hexdigest(), len(data))
    assert stream.asked and set(stream.asked) == {100}
    assert sha256_stream(io.BytesIO(b"")) == (hashlib.sha256(b"").hexdigest(), 0)


def test_file_hash_reads_in_the_chunk_size_asked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "f.bin"
    path.write_bytes(b"x" * 1000)
    sizes: list[int] = []
    real = hashing_module.sha256_stream

    def spy(stream: io.BufferedReader, chunk_size: int = hashing_module.CHUNK_SIZE) -> tuple[str, int]:
        sizes.append(chunk_size)
        return real(stream, chunk_size)

    monkeypatch.setattr(hashing_module, "sha256_stream", spy)
    assert sha256_file(path, chunk_size=64) == hashlib.sha256(b"x" * 1000).hexdigest()
    assert sizes == [64]
