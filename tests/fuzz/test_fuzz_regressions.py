"""Every input kept in ``tests/fuzz/corpus/`` (seeds, and each crash or hang the fuzzer found,
named ``crash-...``) replayed through its fuzz target in the normal suite: a decoder that lets an
arbitrary exception escape again fails here, without atheris."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from fuzz_targets import TARGETS

CORPUS = Path(__file__).resolve().parent / "corpus"
CASES = sorted((name, path) for name in TARGETS for path in (CORPUS / name).iterdir())


def test_every_target_has_a_corpus() -> None:
    assert {name for name, _ in CASES} == set(TARGETS)


@pytest.mark.parametrize(("name", "path"), CASES, ids=[f"{n}/{p.name}" for n, p in CASES])
def test_corpus_input_keeps_the_decoder_contract(name: str, path: Path) -> None:
    if name == "ui_rest" and os.environ.get("CI", "").lower() != "true":
        pytest.importorskip("starlette")  # the [ui] extra (installed in CI: no skip there)
    TARGETS[name](path.read_bytes())
