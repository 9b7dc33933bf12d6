"""Naming a pystorm component in a topology (``pystorm_component``) and the command that runs
one in a subprocess (``python -m stormpy.multilang.pystorm_run``): which component class and
arguments each form gives a topology, the refusals in full, and the runner's class loading and
serializer choice (run in this process, with a stand-in whose ``run`` records how it was built)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pystorm
import pytest

from stormpy.multilang import pystorm_component
from stormpy.multilang._pystorm_adapter import PystormBolt, PystormSpout
from stormpy.multilang._pystorm_spec import RUNNER, PystormComponent
from stormpy.multilang._shell_bolt import ShellBolt
from stormpy.multilang._shell_spout import ShellSpout
from stormpy.multilang.pystorm_run import SERIALIZER_ENV, load, main
from stormpy.multilang.streamparse import Stream


class Words(pystorm.Spout):
    outputs = ["word"]


class Split(pystorm.Bolt):
    outputs = [Stream(["word"]), Stream(["len"], name="lengths", direct=True)]


class Quiet(pystorm.Bolt):
    """Declares no outputs of its own."""


class Batches(pystorm.BatchingBolt):
    outputs = ["n"]


class Tickless(pystorm.TicklessBatchingBolt):
    outputs = ["n"]
    secs_between_batches = 3


class TicklessUnset(pystorm.TicklessBatchingBolt):
    outputs = ["n"]
    secs_between_batches = None


MODULE = __name__


def test_an_in_process_bolt_names_its_class_and_outputs() -> None:
    handle = pystorm_component(Split)
    assert isinstance(handle, PystormComponent)
    assert handle.component_class is PystormBolt
    assert handle.component_kwargs == {"component": f"{MODULE}:Split", "outputs": {
        "default": {"fields": ["word"], "direct": False},
        "lengths": {"fields": ["len"], "direct": True}}}
    assert (handle.spout, handle.shell, handle.serializer, handle.tick_secs) == (False, False, None, None)


def test_the_public_handle_runs_in_process_unless_told() -> None:
    handle = PystormComponent(Split)
    assert (handle.shell, handle.serializer, handle.tick_secs) == (False, None, None)
    assert handle.component_class is PystormBolt
    assert PystormComponent(Split, None, True).component_class is ShellBolt


def test_an_in_process_spout_and_outputs_given_to_the_call() -> None:
    handle = pystorm_component(Words, ["a", "b"])
    assert handle.spout and handle.component_class is PystormSpout
    assert handle.component_kwargs == {"component": f"{MODULE}:Words",
                                       "outputs": {"default": {"fields": ["a", "b"], "direct": False}}}
    assert pystorm_component(Quiet, {}).component_kwargs == {"component": f"{MODULE}:Quiet",
                                                            "outputs": {}}
    # a spout takes no tick frequency, whatever it is given
    assert "tick_secs" not in pystorm_component(Words, tick_secs=2).component_kwargs


def test_a_shell_component_runs_the_runner_with_its_serializer() -> None:
    bolt = pystorm_component(Split, shell=True, serializer="msgpack")
    assert bolt.component_class is ShellBolt
    assert bolt.component_kwargs == {
        "command": [sys.executable, "-m", RUNNER, f"{MODULE}:Split"],
        "outputs": {"default": {"fields": ["word"], "direct": False},
                    "lengths": {"fields": ["len"], "direct": True}},
        "serializer": "msgpack"}
    assert RUNNER == "stormpy.multilang.pystorm_run"
    spout = pystorm_component(Words, shell=True)
    assert spout.component_class is ShellSpout
    assert spout.component_kwargs == {"command": [sys.executable, "-m", RUNNER, f"{MODULE}:Words"],
                                      "outputs": {"default": {"fields": ["word"], "direct": False}}}


def test_tick_frequencies() -> None:
    assert pystorm_component(Batches, tick_secs=2).component_kwargs["tick_secs"] == 2
    assert "tick_secs" not in pystorm_component(Batches).component_kwargs
    assert "tick_secs" not in pystorm_component(Batches, tick_secs=0).component_kwargs
    # a tickless batching bolt in-process ticks every secs_between_batches unless told otherwise
    assert pystorm_component(Tickless).component_kwargs["tick_secs"] == 3
    assert pystorm_component(Tickless).tick_secs == 3
    assert pystorm_component(Tickless, tick_secs=1).component_kwargs["tick_secs"] == 1
    assert "tick_secs" not in pystorm_component(TicklessUnset).component_kwargs
    # through the shell host, pystorm's own batcher thread runs it: no ticks
    assert pystorm_component(Tickless, shell=True).tick_secs is None
    assert pystorm_component(Batches, shell=True, tick_secs=4).tick_secs == 4
    assert pystorm_component(Split, tick_secs=5).component_kwargs["tick_secs"] == 5


def test_what_is_no_pystorm_component_is_refused() -> None:
    for bad in (dict, 42, "x", pystorm.Component):
        with pytest.raises(TypeError) as err:
            pystorm_component(bad)  # type: ignore[arg-type]
        assert str(err.value) == f"{bad!r} is not a pystorm Bolt or Spout subclass"


def test_a_component_without_outputs_is_refused_naming_it() -> None:
    with pytest.raises(ValueError) as err:
        pystorm_component(Quiet)
    assert str(err.value) == ("Quiet declares no outputs: pass pystorm_component(cls, outputs=[...]) "
                              "({} for none)")


def test_a_bad_declaration_is_refused_naming_the_users_class() -> None:
    for cls in (Split, Words):
        with pytest.raises(ValueError) as not_a_list:
            pystorm_component(cls, 5)
        assert str(not_a_list.value) == (f"{cls.__name__}: outputs must be a list of fields or "
                                         "streams, or a map of stream to fields, got 5")
        with pytest.raises(ValueError) as bad_entry:
            pystorm_component(cls, ["a", 1])
        assert str(bad_entry.value) == (f"{cls.__name__}: outputs entries must be field names or "
                                        "Stream objects, got 1")
    with pytest.raises(ValueError) as twice:
        pystorm_component(Split, [Stream(["a"]), Stream(["b"])], shell=True)
    assert str(twice.value) == "Split: stream 'default' declared twice"
    assert pystorm_component(Words, {"s": {"fields": ["a"], "direct": True}}).component_kwargs[
        "outputs"] == {"s": {"fields": ["a"], "direct": True}}


def test_a_subprocess_cannot_run_a_class_it_cannot_import() -> None:
    class Local(pystorm.Bolt):
        outputs = ["x"]

    with pytest.raises(ValueError) as err:
        pystorm_component(Local, shell=True)
    assert str(err.value) == (
        "test_a_subprocess_cannot_run_a_class_it_cannot_import.<locals>.Local is defined inside a "
        "function or in __main__: a subprocess cannot import it (move it to an importable module)")
    assert pystorm_component(Local).component_class is PystormBolt  # in-process it runs
    Main = type("Main", (pystorm.Bolt,), {"outputs": ["x"], "__module__": "__main__"})
    with pytest.raises(ValueError, match="^Main is defined inside a function or in __main__"):
        pystorm_component(Main, shell=True)
    assert pystorm_component(Main).component_kwargs["component"] == "__main__:Main"


# -- the runner ---------------------------------------------------------------------------------

RUNS: list[tuple[str, str]] = []


class Recorder:
    """Stands in for a pystorm component: records the serializer it was built with at ``run``."""

    class Inner:
        def __init__(self, serializer: str) -> None:
            self.serializer = serializer

        def run(self) -> None:
            RUNS.append(("inner", self.serializer))

    def __init__(self, serializer: str) -> None:
        self.serializer = serializer

    def run(self) -> None:
        RUNS.append(("recorder", self.serializer))


not_a_class = Recorder("json")


def test_load_takes_a_colon_or_a_dotted_path() -> None:
    assert load(f"{MODULE}:Recorder") is Recorder
    assert load(f"{MODULE}.Recorder") is Recorder
    assert load(f"{MODULE}:Recorder.Inner") is Recorder.Inner
    assert load("collections:OrderedDict").__name__ == "OrderedDict"
    with pytest.raises(TypeError) as err:
        load(f"{MODULE}:not_a_class")
    assert str(err.value) == f"'{MODULE}:not_a_class' is not a class"
    with pytest.raises(AttributeError):
        load(f"{MODULE}:Missing")


def test_load_takes_a_dotted_path_into_a_package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    package = tmp_path / "pystorm_spec_pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "components.py").write_text("class Here:\n    pass\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in ("pystorm_spec_pkg", "pystorm_spec_pkg.components"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    try:
        # the module is everything before the last dot (the package's module not yet imported)
        assert load("pystorm_spec_pkg.components.Here").__name__ == "Here"
        assert load("pystorm_spec_pkg.components:Here") is load("pystorm_spec_pkg.components.Here")
    finally:
        for name in ("pystorm_spec_pkg", "pystorm_spec_pkg.components"):
            sys.modules.pop(name, None)


@pytest.fixture
def runs(monkeypatch: pytest.MonkeyPatch) -> Any:
    RUNS.clear()
    monkeypatch.delenv(SERIALIZER_ENV, raising=False)
    monkeypatch.setattr(sys, "path", list(sys.path))
    yield RUNS
    RUNS.clear()


def test_the_runner_builds_the_class_with_the_serializer_and_runs_it(runs: Any,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    assert SERIALIZER_ENV == "STORMPY_MULTILANG_SERIALIZER"
    main([f"{MODULE}:Recorder"])
    main([f"{MODULE}:Recorder.Inner", "--serializer", "msgpack"])
    monkeypatch.setenv(SERIALIZER_ENV, "msgpack")
    main([f"{MODULE}:Recorder"])
    main([f"{MODULE}:Recorder", "--serializer", "json"])
    monkeypatch.setenv(SERIALIZER_ENV, "")
    main([f"{MODULE}:Recorder"])
    assert runs == [("recorder", "json"), ("inner", "msgpack"), ("recorder", "msgpack"),
                    ("recorder", "json"), ("recorder", "json")]


def test_the_runner_imports_from_its_working_directory(runs: Any, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "pystorm_spec_cwd_module.py").write_text(
        f"from {MODULE} import Recorder\n\nclass Here(Recorder):\n    pass\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.delitem(sys.modules, "pystorm_spec_cwd_module", raising=False)
    main(["pystorm_spec_cwd_module:Here"])
    assert runs == [("recorder", "json")]
    assert sys.path[0] == str(tmp_path)
    sys.modules.pop("pystorm_spec_cwd_module", None)


def test_the_runner_refuses_an_unknown_serializer(runs: Any, capsys: pytest.CaptureFixture[str],
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(SystemExit) as exit_:
        main([f"{MODULE}:Recorder", "--serializer", "xml"])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: python -m stormpy.multilang.pystorm_run [-h]")
    assert "argument --serializer: invalid choice: 'xml' (choose from" in err
    with pytest.raises(SystemExit):
        main([])
    assert "the following arguments are required: component" in capsys.readouterr().err
    with pytest.raises(SystemExit) as helped:
        main(["--help"])
    assert helped.value.code == 0
    lines = capsys.readouterr().out.splitlines()
    assert "  component             module:Class of a pystorm Bolt or Spout subclass" in lines
    assert runs == []
