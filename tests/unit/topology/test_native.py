"""The compiled tuple path: which modules are used, and when the sources win."""

from __future__ import annotations

import importlib.machinery
import os
import subprocess
import sys
from pathlib import Path

import pytest

import stormpy._native as native
from stormpy._native import COMPILED_MODULES, compiled_state

EXT = importlib.machinery.EXTENSION_SUFFIXES[0]
MODULES = ("pkg.a", "pkg.sub.b")


def _tree(root: Path, *, compiled: tuple[str, ...] = MODULES) -> None:
    for module in MODULES:
        base = root.joinpath(*module.split("."))
        base.parent.mkdir(parents=True, exist_ok=True)
        base.with_suffix(".py").write_text("x = 1\n")
        os.utime(base.with_suffix(".py"), (1000, 1000))
        if module in compiled:
            ext = Path(str(base) + EXT)
            ext.write_bytes(b"")
            os.utime(ext, (2000, 2000))


def test_all_compiled_and_fresh_is_used(tmp_path: Path) -> None:
    _tree(tmp_path)
    assert compiled_state(MODULES, str(tmp_path), pure_env="", check_times=True) == (True, "")


def test_a_missing_extension_means_pure(tmp_path: Path) -> None:
    _tree(tmp_path, compiled=("pkg.a",))
    used, why = compiled_state(MODULES, str(tmp_path), pure_env="", check_times=True)
    assert not used and why == "pkg.sub.b is not compiled"


def test_an_edited_source_in_a_checkout_means_pure(tmp_path: Path) -> None:
    _tree(tmp_path)
    source = tmp_path / "pkg" / "sub" / "b.py"
    os.utime(source, (3000, 3000))
    used, why = compiled_state(MODULES, str(tmp_path), pure_env="", check_times=True)
    assert not used and why.startswith("pkg.sub.b: its compiled extension is older than")
    # an installed package (files written in any order) does not compare times
    assert compiled_state(MODULES, str(tmp_path), pure_env="", check_times=False) == (True, "")


def test_stormpy_pure_wins(tmp_path: Path) -> None:
    _tree(tmp_path)
    for value in ("1", "true", "YES"):
        assert compiled_state(MODULES, str(tmp_path), pure_env=value) == \
            (False, "STORMPY_PURE is set")
    assert compiled_state(MODULES, str(tmp_path), pure_env="0", check_times=False)[0]


def _loaded_files(env_extra: dict[str, str]) -> dict[str, str]:
    code = ("import importlib, stormpy._native as n\n"
            "for m in n.COMPILED_MODULES: print(m, importlib.import_module(m).__file__)\n")
    out = subprocess.run([sys.executable, "-c", code], env={**os.environ, **env_extra},
                         capture_output=True, text=True, check=True, timeout=60).stdout
    return dict(line.split(" ", 1) for line in out.splitlines())


def test_stormpy_pure_loads_every_module_from_source() -> None:
    files = _loaded_files({"STORMPY_PURE": "1"})
    assert sorted(files) == sorted(COMPILED_MODULES)
    assert all(path.endswith(".py") for path in files.values()), files


def test_the_compiled_set_is_used_whole_or_not_at_all() -> None:
    files = _loaded_files({"STORMPY_PURE": ""})
    kinds = {path.endswith(".py") for path in files.values()}
    assert len(kinds) == 1, files
    assert kinds == {not compiled_state(pure_env="")[0]}


def test_ci_runs_the_compiled_tuple_path() -> None:
    """``make test`` compiles the tuple path (gcc and the Python headers are on the machine); a
    silent fallback to pure Python would leave the compiled code untested."""
    if os.environ.get("CI") != "true":
        pytest.skip("checked under CI=true, where make test has just built the package")
    if native.PURE_REASON == "STORMPY_PURE is set":
        pytest.skip("the pure-Python tuple path was asked for")
    assert native.COMPILED, native.PURE_REASON


def test_a_tuple_copies_and_pickles_whole_compiled_or_not() -> None:
    import copy
    import pickle

    from stormpy import Fields, Tuple

    tup = Tuple(["a", 1], "s", 3, "comp", Fields(["w", "n"]), 0, 0, {11: 22, 33: 44})
    tup.ack_val = 5
    single = Tuple(["b", 2], "s", 3, "comp", Fields(["w", "n"]), 7, 9)
    for clone in (copy.copy(tup), copy.deepcopy(tup), pickle.loads(pickle.dumps(tup))):
        assert (clone.values, clone.stream, clone.task, clone.component, clone.root, clone.edge,
                clone.anchors, clone.ack_val) == (["a", 1], "s", 3, "comp", 0, 0,
                                                  {11: 22, 33: 44}, 5)
        assert clone["n"] == 1 and clone.tree_edges() == {11: 22, 33: 44}
    clone = pickle.loads(pickle.dumps(single))
    assert (clone.root, clone.edge, clone.anchors) == (7, 9, None)
    assert clone.tree_edges() == {7: 9}


def test_a_compiled_tuple_is_not_tracked_by_the_cycle_collector_and_reuses_its_memory() -> None:
    """Compiled, ``Tuple`` is acyclic (never tracked by the cycle collector) and keeps its last
    freed instance for the next (``free_list_len``): a tuple freed and a new one made reuse one
    block, and the new one has only its own values."""
    import gc

    from stormpy import Fields, Tuple

    if not native.COMPILED:
        pytest.skip(f"the tuple path is not compiled here ({native.PURE_REASON})")
    tup = Tuple(["a"], "s", 1, "c", Fields(["w"]), 5, 6, None)
    assert not gc.is_tracked(tup)
    first = id(tup)
    del tup
    again = Tuple(["b"], "t", 2, "d", None)
    assert id(again) == first
    assert (again.values, again.stream, again.task, again.component, again.fields, again.root,
            again.edge, again.anchors, again.ack_val) == (["b"], "t", 2, "d", None, 0, 0, None, 0)
