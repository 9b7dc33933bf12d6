"""The package root's two mechanisms, driven directly: which file each compiled-path module is
loaded from (the source finder, the choice made at import and its warning) and which objects
``publish`` gives the public package's name."""

from __future__ import annotations

import importlib.machinery
import os
import sys
import warnings
from pathlib import Path
from typing import Any

import pytest

import stormpy._native as native
from stormpy._public import _PUBLISHED, publish, published

EXT = importlib.machinery.EXTENSION_SUFFIXES[0]


def test_module_files_name_the_source_and_every_extension_beside_it(tmp_path: Path) -> None:
    base = tmp_path / "pkg" / "sub" / "mod"
    base.parent.mkdir(parents=True)
    base.with_suffix(".py").write_text("x = 1\n")
    assert native.module_files("pkg.sub.mod", str(tmp_path)) == (str(base) + ".py", [])
    suffixes = importlib.machinery.EXTENSION_SUFFIXES
    for suffix in suffixes:
        Path(str(base) + suffix).write_bytes(b"")
    source, exts = native.module_files("pkg.sub.mod", str(tmp_path))
    assert source == str(base) + ".py"
    assert exts == [str(base) + suffix for suffix in suffixes]


def test_the_root_is_the_directory_holding_the_package() -> None:
    assert Path(native._ROOT, "stormpy", "_native.py").resolve() == Path(native.__file__).resolve()
    source, _ = native.module_files("stormpy.topology._tuple")
    assert Path(source).resolve() == Path(native._ROOT, "stormpy", "topology", "_tuple.py").resolve()


def test_the_compiled_state_reads_stormpy_pure_from_the_environment(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    source = tmp_path / "m.py"
    source.write_text("x = 1\n")
    Path(str(tmp_path / "m") + EXT).write_bytes(b"")
    monkeypatch.setenv("STORMPY_PURE", " True ")
    assert native.compiled_state(("m",), str(tmp_path), check_times=False) == \
        (False, "STORMPY_PURE is set")
    monkeypatch.delenv("STORMPY_PURE")
    assert native.compiled_state(("m",), str(tmp_path), check_times=False) == (True, "")


def test_times_are_compared_to_the_oldest_extension(tmp_path: Path) -> None:
    source = tmp_path / "m.py"
    source.write_text("x = 1\n")
    os.utime(source, (2000, 2000))
    suffixes = importlib.machinery.EXTENSION_SUFFIXES
    if len(suffixes) < 2:
        pytest.skip("one extension suffix on this Python")
    older, newer = Path(str(tmp_path / "m") + suffixes[0]), Path(str(tmp_path / "m") + suffixes[1])
    older.write_bytes(b"")
    newer.write_bytes(b"")
    os.utime(older, (1000, 1000))
    os.utime(newer, (3000, 3000))
    used, why = native.compiled_state(("m",), str(tmp_path), pure_env="", check_times=True)
    assert not used and why == f"m: its compiled extension is older than {source} (run make)"
    os.utime(source, (3000, 3000))  # as new as the newest, newer than the oldest: still stale
    assert not native.compiled_state(("m",), str(tmp_path), pure_env="", check_times=True)[0]
    os.utime(older, (3000, 3000))  # the same time as the source is not older
    assert native.compiled_state(("m",), str(tmp_path), pure_env="", check_times=True) == (True, "")


def test_a_missing_source_does_not_make_an_extension_stale(tmp_path: Path) -> None:
    Path(str(tmp_path / "m") + EXT).write_bytes(b"")
    assert native.compiled_state(("m",), str(tmp_path), pure_env="", check_times=True) == (True, "")


def test_the_source_finder_loads_only_the_listed_modules_from_their_sources() -> None:
    finder = native._SourceFinder()
    assert finder.find_spec("stormpy.topology._fields") is None  # not on the compiled path
    assert finder.find_spec("json") is None
    spec = finder.find_spec("stormpy.acker.core")
    assert spec is not None and spec.name == "stormpy.acker.core"
    assert spec.origin is not None and spec.origin.endswith(os.path.join("acker", "core.py"))
    assert isinstance(spec.loader, importlib.machinery.SourceFileLoader)


def test_the_source_finder_leaves_a_module_without_its_source_to_the_next_finder(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(native, "module_files",
                        lambda module: (str(tmp_path / "gone.py"), [str(tmp_path / "gone.so")]))
    assert native._SourceFinder().find_spec("stormpy.acker.core") is None


@pytest.fixture
def meta_path() -> Any:
    before = list(sys.meta_path)
    yield
    sys.meta_path[:] = before


def test_compiled_and_fresh_selects_the_extensions_and_adds_no_finder(
        monkeypatch: pytest.MonkeyPatch, meta_path: None) -> None:
    monkeypatch.setattr(native, "compiled_state", lambda: (True, ""))
    before = list(sys.meta_path)
    assert native._select() == (True, "")
    assert sys.meta_path == before


def test_pure_without_any_extension_adds_no_finder_and_no_warning(
        monkeypatch: pytest.MonkeyPatch, meta_path: None) -> None:
    monkeypatch.setattr(native, "compiled_state", lambda: (False, "stormpy.acker.core is not compiled"))
    monkeypatch.setattr(native, "module_files", lambda module: (module + ".py", []))
    before = list(sys.meta_path)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert native._select() == (False, "stormpy.acker.core is not compiled")
    assert sys.meta_path == before


def test_a_stale_or_partial_build_puts_the_source_finder_first_and_warns_why(
        monkeypatch: pytest.MonkeyPatch, meta_path: None) -> None:
    why = "stormpy.acker.core: its compiled extension is older than core.py (run make)"
    monkeypatch.setattr(native, "compiled_state", lambda: (False, why))
    # one extension somewhere in the set is enough to need the finder
    monkeypatch.setattr(native, "module_files", lambda module: (
        module + ".py", ["x.so"] if module == native.COMPILED_MODULES[-1] else []))
    with pytest.warns(UserWarning) as caught:
        assert native._select() == (False, why)
    assert [str(w.message) for w in caught] == [f"stormpy: using the pure-Python tuple path: {why}"]
    assert isinstance(sys.meta_path[0], native._SourceFinder)


def test_stormpy_pure_with_extensions_present_uses_the_sources_without_a_warning(
        monkeypatch: pytest.MonkeyPatch, meta_path: None) -> None:
    monkeypatch.setattr(native, "compiled_state", lambda: (False, "STORMPY_PURE is set"))
    monkeypatch.setattr(native, "module_files", lambda module: (module + ".py", ["x.so"]))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert native._select() == (False, "STORMPY_PURE is set")
    assert isinstance(sys.meta_path[0], native._SourceFinder)


def _made_up_function() -> None:
    """Published under a made-up package below."""


class _Nested:
    class Inner:
        pass


class Owned:
    pass


def test_publish_records_the_package_even_without_names() -> None:
    try:
        publish("stormpy.made_up_empty", {})
        assert "stormpy.made_up_empty" in published()
        assert isinstance(published(), frozenset)
    finally:
        _PUBLISHED.discard("stormpy.made_up_empty")


def test_publish_skips_values_missing_nested_names_and_another_packages_names() -> None:
    inner_module, owned_module = _Nested.Inner.__module__, Owned.__module__
    fn_module = _made_up_function.__module__
    _PUBLISHED.add("stormpy.made_up_owner")
    try:
        Owned.__module__ = "stormpy.made_up_owner"
        namespace: dict[str, Any] = {
            "__all__": ["Inner", "absent", "Owned", "_made_up_function", "value"],
            "Inner": _Nested.Inner,      # qualname _Nested.Inner: not its own name here
            "Owned": Owned,              # published first by stormpy.made_up_owner
            "_made_up_function": _made_up_function,
            "value": [1, 2],
        }
        publish("stormpy.made_up_pkg", namespace)
        assert _Nested.Inner.__module__ == inner_module
        assert Owned.__module__ == "stormpy.made_up_owner"
        assert _made_up_function.__module__ == "stormpy.made_up_pkg"
        assert namespace["value"] == [1, 2]
    finally:
        _Nested.Inner.__module__ = inner_module
        Owned.__module__ = owned_module
        _made_up_function.__module__ = fn_module
        _PUBLISHED.discard("stormpy.made_up_owner")
        _PUBLISHED.discard("stormpy.made_up_pkg")


class _ModuleFrozen(type):
    def __setattr__(cls, name: str, value: Any) -> None:
        if name == "__module__":
            raise AttributeError("__module__ is read-only here")
        super().__setattr__(name, value)


class Sealed(metaclass=_ModuleFrozen):
    pass


def test_publish_continues_past_objects_that_refuse_a_new_module() -> None:
    fn_module, sealed_module = _made_up_function.__module__, Sealed.__module__
    try:
        # int (an immutable type: TypeError) and Sealed (AttributeError) keep their modules; the
        # names after them are still published
        publish("stormpy.made_up_more", {"__all__": ["int", "Sealed", "_made_up_function"],
                                         "int": int, "Sealed": Sealed,
                                         "_made_up_function": _made_up_function})
        assert int.__module__ == "builtins" and Sealed.__module__ == sealed_module
        assert _made_up_function.__module__ == "stormpy.made_up_more"
    finally:
        _made_up_function.__module__ = fn_module
        _PUBLISHED.discard("stormpy.made_up_more")


class _Getter:
    """A method descriptor by protocol (``__get__``, no ``__set__``): ``inspect.isroutine`` says
    yes, yet the instance has no ``__qualname__``."""

    def __get__(self, obj: object, owner: type | None = None) -> int:
        return 1


class _NoModule(_Getter):
    """A routine by protocol that names itself but has no readable ``__module__``."""

    __qualname__ = "nameless"

    @property  # type: ignore[misc]
    def __module__(self) -> str:
        raise AttributeError("no module")


def test_publish_skips_routines_without_a_qualname_or_a_module() -> None:
    getter, nameless = _Getter(), _NoModule()
    nameless.__qualname__ = "nameless"
    try:
        publish("stormpy.made_up_odd", {"__all__": ["getter", "nameless"],
                                        "getter": getter, "nameless": nameless})
        assert not hasattr(getter, "__qualname__") and "__module__" not in vars(getter)
    finally:
        _PUBLISHED.discard("stormpy.made_up_odd")


def _module_level_of_the_package(why: str) -> None:
    native._select()


def _the_importer(why: str) -> None:
    _module_level_of_the_package(why)  # the line the warning names


def test_the_stale_build_warning_names_the_line_that_imported_stormpy(
        monkeypatch: pytest.MonkeyPatch, meta_path: None) -> None:
    """``_select`` runs at the package's import: the warning is attributed two frames up, to the
    code that imported ``stormpy`` (here ``_the_importer``), not to stormpy's own lines."""
    why = "stormpy.acker.core is not compiled"
    monkeypatch.setattr(native, "compiled_state", lambda: (False, why))
    monkeypatch.setattr(native, "module_files", lambda module: (module + ".py", ["x.so"]))
    with pytest.warns(UserWarning) as caught:
        _the_importer(why)
    warning = caught[0]
    assert warning.filename == __file__
    lines = Path(__file__).read_text().splitlines()
    assert lines[warning.lineno - 1].strip() == \
        "_module_level_of_the_package(why)  # the line the warning names"
