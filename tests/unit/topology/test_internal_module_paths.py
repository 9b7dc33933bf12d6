"""A component path into stormpy written before its internal modules took their ``_`` prefix
still resolves (a spec stored by an older Nimbus names ``stormpy.pkg.mod:Class`` for
``stormpy.pkg._mod:Class``);
other missing modules still fail naming the path."""

from __future__ import annotations

import pytest

import stormpy._native
from stormpy.topology._imports import import_object


def test_a_path_to_a_stormpy_module_without_its_underscore_finds_the_internal_module() -> None:
    assert import_object("stormpy.native:COMPILED_MODULES") is stormpy._native.COMPILED_MODULES
    assert import_object("stormpy.native.COMPILED_MODULES") is stormpy._native.COMPILED_MODULES


def test_missing_modules_still_fail_naming_the_path() -> None:
    for path in ("stormpy.no_such_module:Thing", "stormpy._no_such_module:Thing",
                 "no_such_package.native:Thing"):
        with pytest.raises(ImportError, match="cannot import module") as err:
            import_object(path)
        assert repr(path) in str(err.value)
    with pytest.raises(ImportError, match="has no attribute 'Nothing'"):
        import_object("stormpy.native:Nothing")
