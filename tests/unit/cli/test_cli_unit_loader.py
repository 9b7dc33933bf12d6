"""``PATH MODULE[:ATTR]`` loading (``cli/topology_loader.py``), called directly: a spec, a
builder or a function returning one, ``topology`` by default, the module's ``config`` dict as
base config, and each refusal's exact message (missing path, import failure, missing attribute,
no topology, a config that is no dict); a check the module ran is passed on as it is."""

from __future__ import annotations

import itertools
import sys
import textwrap
from pathlib import Path

import pytest

from stormpy.cli.topology_loader import TopologyLoadError, load_topology
from stormpy.topology import InvalidTopologyError, TopologySpec

_names = itertools.count()

BUILD = '''
from stormpy.topology import Spout, TopologyBuilder


class Numbers(Spout):
    outputs = ["n"]

    def next_tuple(self):
        pass


def make_builder():
    builder = TopologyBuilder()
    builder.set_spout("numbers", Numbers)
    return builder
'''


def write(tmp_path: Path, body: str) -> str:
    """A module of a fresh name in ``tmp_path`` (modules stay imported per process)."""
    name = f"loader_topo_{next(_names)}"
    (tmp_path / f"{name}.py").write_text(textwrap.dedent(BUILD) + textwrap.dedent(body))
    return name


@pytest.fixture(autouse=True)
def _restore_sys_path():
    before = list(sys.path)
    yield
    sys.path[:] = before


def test_a_spec_named_topology_is_the_default_attribute(tmp_path: Path) -> None:
    name = write(tmp_path, "topology = make_builder().create_topology()\n")
    loaded = load_topology(tmp_path, name)
    assert isinstance(loaded.spec, TopologySpec)
    assert list(loaded.spec.spouts) == ["numbers"]
    assert (loaded.module, loaded.attr, loaded.config) == (name, "topology", {})
    assert sys.path[0] == str(tmp_path.resolve())


def test_a_builder_or_a_function_returning_one_under_a_named_attribute(tmp_path: Path) -> None:
    name = write(tmp_path, "built = make_builder()\nconfig = {'topology.workers': 2}\n")
    loaded = load_topology(tmp_path, f"{name}:built")
    assert isinstance(loaded.spec, TopologySpec) and loaded.attr == "built"
    assert loaded.config == {"topology.workers": 2}
    name = write(tmp_path, "")
    loaded = load_topology(tmp_path, f"{name}:make_builder")
    assert list(loaded.spec.spouts) == ["numbers"] and loaded.attr == "make_builder"


def test_a_file_path_puts_its_directory_first_on_the_path(tmp_path: Path) -> None:
    name = write(tmp_path, "topology = make_builder()\n")
    loaded = load_topology(tmp_path / f"{name}.py", name)
    assert list(loaded.spec.spouts) == ["numbers"]
    assert sys.path[0] == str(tmp_path.resolve())
    load_topology(tmp_path, name)  # the directory is not added twice
    assert sys.path.count(str(tmp_path.resolve())) == 1


def test_a_missing_path_is_refused(tmp_path: Path) -> None:
    with pytest.raises(TopologyLoadError) as info:
        load_topology(tmp_path / "nope", "x")
    assert str(info.value) == f"topology path {str(tmp_path / 'nope')!r} does not exist"


def test_a_module_that_fails_to_import_is_refused_with_its_error(tmp_path: Path) -> None:
    name = write(tmp_path, "raise RuntimeError('boom')\n")
    with pytest.raises(TopologyLoadError) as info:
        load_topology(tmp_path, name)
    assert str(info.value) == (f"cannot import module {name!r} from {tmp_path.resolve()}: "
                               "RuntimeError: boom")
    assert isinstance(info.value.__cause__, RuntimeError)


def test_a_missing_attribute_is_refused(tmp_path: Path) -> None:
    name = write(tmp_path, "")
    with pytest.raises(TopologyLoadError) as info:
        load_topology(tmp_path, f"{name}:wordcount")
    assert str(info.value) == f"module {name!r} has no attribute 'wordcount'"
    assert info.value.__cause__ is None and info.value.__suppress_context__


def test_an_attribute_that_is_no_topology_is_refused(tmp_path: Path) -> None:
    name = write(tmp_path, "topology = 42\nNumbersAlias = Numbers\n")
    with pytest.raises(TopologyLoadError) as info:
        load_topology(tmp_path, name)
    assert str(info.value) == (f"{name}:topology is int, not a topology (expected a "
                               "TopologySpec, a TopologyBuilder, or a function returning one)")
    with pytest.raises(TopologyLoadError) as info:  # a class is not called
        load_topology(tmp_path, f"{name}:NumbersAlias")
    assert str(info.value).startswith(f"{name}:NumbersAlias is type, not a topology")


def test_a_config_that_is_no_dict_is_refused_and_an_empty_one_is_none(tmp_path: Path) -> None:
    name = write(tmp_path, "topology = make_builder()\nconfig = ['topology.workers']\n")
    with pytest.raises(TopologyLoadError) as info:
        load_topology(tmp_path, name)
    assert str(info.value) == f"{name}.config must be a dict, got list"
    name = write(tmp_path, "topology = make_builder()\nconfig = None\n")
    assert load_topology(tmp_path, name).config == {}


def test_the_config_is_a_copy(tmp_path: Path) -> None:
    name = write(tmp_path, "topology = make_builder()\nconfig = {'a': 1}\n")
    loaded = load_topology(tmp_path, name)
    loaded.config["a"] = 2
    assert sys.modules[name].config == {"a": 1}


def test_a_check_the_module_ran_is_passed_on_as_it_is(tmp_path: Path) -> None:
    name = write(tmp_path, "from stormpy.topology import InvalidTopologyError\n"
                           "raise InvalidTopologyError('bolt count has no inputs')\n")
    with pytest.raises(InvalidTopologyError, match="^bolt count has no inputs$"):
        load_topology(tmp_path, name)


def test_the_loaded_spec_is_validated(tmp_path: Path) -> None:
    name = write(tmp_path, "from stormpy.topology import Bolt\n"
                           "class Sink(Bolt):\n    def execute(self, tup):\n        pass\n"
                           "b = make_builder()\nb.set_bolt('sink', Sink).shuffle_grouping('nowhere')\n"
                           "topology = b.create_topology\n")
    with pytest.raises(InvalidTopologyError, match="nowhere"):
        load_topology(tmp_path, name)
