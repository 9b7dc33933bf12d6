"""Every core key has a type in the key table, the submit check applies it with one error naming
the key, the value and what was expected, and defaults are read only from the table."""

from __future__ import annotations

import ast
import json
from pathlib import Path
from typing import Any

import pytest

from stormpy.config import (
    DEFAULTS,
    ConfigError,
    SettingError,
    load_config,
    load_config_args,
    parse_config_args,
    setting,
)
from stormpy.config.checks import Check
from stormpy.config.keys import CORE_KEYS
from stormpy.config.validate import check_topology_config
from stormpy.testing import FeederSpout, LocalCluster
from stormpy.topology import Bolt, TopologyBuilder, Tuple
from stormpy.windowing import Count, Duration, Window, WindowedBolt

SRC = Path(__file__).resolve().parents[3] / "src" / "stormpy"


class Part:
    """A component as the submit check reads it."""

    def __init__(self, kind: str, config: dict[str, Any]) -> None:
        self.kind = kind
        self.config = config


# -- the table -------------------------------------------------------------------------------------
@pytest.mark.parametrize("key", CORE_KEYS, ids=lambda k: k.name)
def test_every_core_key_has_a_check_its_default_passes(key: Any) -> None:
    assert isinstance(key.check, Check), f"{key.name} has no type in stormpy/config/keys.py"
    assert key.check.expected and key.check.expected != "a value", key.name
    if key.default is not None:
        assert key.check(key.name, key.default) == key.default


@pytest.mark.parametrize(("key", "value", "expected"), [
    ("topology.workers", 0, "an integer >= 1"),
    ("topology.workers", "3", "an integer >= 1"),
    ("topology.workers", True, "an integer >= 1"),
    ("topology.acker.executors", -1, "an integer >= 0"),
    ("topology.message.timeout.secs", 0, "a number of seconds > 0"),
    ("topology.message.timeout.secs", float("nan"), "a number of seconds > 0"),
    ("topology.max.spout.pending", 0, "an integer >= 1"),
    ("topology.spout.max.batch.size", 0, "an integer >= 1"),
    ("topology.stats.sample.rate", 1.5, "a number in 0..1"),
    ("topology.debug", "yes", "true or false"),
    ("topology.state.provider", "rediss",
     "one of memory, sqlite, zookeeper, redis or an import path like 'package.module:Name'"),
    ("topology.auto.task.hooks", "a.b:C",
     "a list of items, each an import path like 'package.module:Name'"),
    ("supervisor.slots.ports", [6700, 70000], "a list of items, each an integer in 1..65535"),
    ("nimbus.seeds", [], "a non-empty string or a list of at least 1 items, each a non-empty string"),
    ("storm.zookeeper.root", "stormpy", "a znode path starting with /"),
    ("storm.zookeeper.auth.scheme", "sasl", "one of digest"),
    ("worker.heartbeat.frequency.secs", 0.01, "a number of seconds >= 0.05"),
])
def test_a_bad_value_is_one_error_naming_key_value_and_expectation(key: str, value: Any,
                                                                   expected: str) -> None:
    with pytest.raises(SettingError) as err:
        check_topology_config({key: value}, {})
    assert err.value.setting == key
    assert str(err.value) == f"{key}: must be {expected}, got {value!r}"


def test_none_is_unset_and_the_default_applies() -> None:
    assert check_topology_config({"topology.max.spout.pending": None, "topology.workers": None,
                                  "topology.debug": None}, {}) == []
    assert setting({"topology.workers": None}, "topology.workers") == DEFAULTS["topology.workers"]


def test_a_components_own_value_is_checked_and_named() -> None:
    with pytest.raises(SettingError, match=r"^topology.max.spout.pending: component 'src': must be "
                                           r"an integer >= 1, got 'many'"):
        check_topology_config({}, {"src": Part("spout", {"topology.max.spout.pending": "many"})})
    with pytest.raises(SettingError, match=r"^topology.tasks: component 'b': must be an integer"):
        check_topology_config({}, {"b": Part("bolt", {"topology.tasks": 0})})
    # user keys of any shape pass: Storm lets topologies carry their own settings
    assert check_topology_config({"my.app.limit": "x"}, {"b": Part("bolt", {"a": [1]})}) == []


def test_a_misspelt_core_key_is_a_warning_with_the_likely_key() -> None:
    warnings = check_topology_config({"topology.max.spout.pendng": 10}, {})
    assert warnings == ["unknown config key topology.max.spout.pendng (did you mean "
                        "topology.max.spout.pending?); it is passed on but stormpy does not read it"]


def test_setting_reads_the_tables_default_when_unset_or_none() -> None:
    assert setting({}, "topology.spout.max.batch.size") == 64
    assert setting({"topology.spout.max.batch.size": None}, "topology.spout.max.batch.size") == 64
    assert setting({"topology.spout.max.batch.size": 3}, "topology.spout.max.batch.size") == 3
    assert setting({}, "topology.max.spout.pending") is None


# -- windows and max spout pending ---------------------------------------------------------------
class Sink(WindowedBolt):
    def execute(self, window: Window) -> None:
        pass


def window_parts(window: Any, spout_conf: dict[str, Any] | None = None) -> dict[str, Any]:
    b = TopologyBuilder()
    spout = b.set_spout("src", FeederSpout(["v"]))
    if spout_conf:
        spout.add_configurations(spout_conf)
    b.set_bolt("win", window).shuffle_grouping("src")
    return b.create_topology().components


def test_a_count_window_above_the_topologys_pending_is_refused_as_storm_does() -> None:
    parts = window_parts(Sink.with_window(Count(50), Count(10)))
    with pytest.raises(SettingError, match=r"^topology.max.spout.pending: must be >= 60 for "
                                           r"component 'win' \(its count window holds that many "
                                           r"tuples un-acked\), got 20"):
        check_topology_config({"topology.max.spout.pending": 20}, parts)
    assert check_topology_config({"topology.max.spout.pending": 60}, parts) == []
    assert check_topology_config({}, parts, cluster_conf={}) == []  # unlimited


def test_a_spouts_own_pending_below_a_count_window_is_a_warning() -> None:
    parts = window_parts(Sink.with_window(Count(50), Count(10)), {"topology.max.spout.pending": 5})
    assert check_topology_config({}, parts) == [
        "spout 'src' sets topology.max.spout.pending 5, below the 60 tuples the count window of "
        "'win' holds: if it feeds that window, the window never fills and the spout stalls"]


def test_a_time_window_with_max_spout_pending_warns_of_the_rate_it_allows() -> None:
    parts = window_parts(Sink.with_tumbling_window(Duration(seconds=10)))
    assert check_topology_config({}, parts, cluster_conf={}) == []  # pending unlimited
    warnings = check_topology_config({"topology.max.spout.pending": 1000}, parts, cluster_conf={})
    assert warnings == [
        "component 'win' holds each tuple un-acked for up to 20 s (its time window); with "
        "topology.max.spout.pending 1000 (every spout) a spout task stalls at 1000 pending tuples, "
        "so the window sees at most 50 tuples/s per spout task; raise or unset "
        "topology.max.spout.pending if the spouts emit faster"]


def test_a_message_timeout_shorter_than_a_window_is_refused_with_the_cluster_default() -> None:
    parts = window_parts(Sink.with_window(Duration(seconds=40), Duration(seconds=5)))
    with pytest.raises(SettingError, match=r"^topology.message.timeout.secs: must be >= 45 for "
                                           r"component 'win' .* got 30;"):
        check_topology_config({}, parts, cluster_conf={})
    # a cluster whose default timeout is long enough accepts it
    assert check_topology_config({}, parts, cluster_conf={"topology.message.timeout.secs": 60}) == []
    assert check_topology_config({"topology.enable.message.timeouts": False}, parts, {}) == []


class Plain(Bolt):
    def execute(self, tup: Tuple) -> None:
        self.ack(tup)


def test_local_cluster_keeps_the_warnings_and_refuses_before_starting_anything() -> None:
    b = TopologyBuilder()
    b.set_spout("src", FeederSpout(["v"]))
    b.set_bolt("win", Sink.with_tumbling_window(Duration(seconds=10))).shuffle_grouping("src")
    spec = b.create_topology()
    with LocalCluster(simulated_time=True) as cluster:
        with pytest.raises(SettingError, match="^topology.workers: must be an integer >= 1"):
            cluster.submit_topology("bad", {"topology.workers": 0}, spec)
        assert "bad" not in cluster.topologies()
        # the check alone gives the warnings and starts nothing
        checked = cluster.check_topology("w", {"topology.max.spout.pending": 500}, spec)
        assert "w" not in cluster.topologies()
        worker = cluster.submit_topology("w", {"topology.max.spout.pending": 500}, spec)
        assert cluster.warnings_of("w") == checked
        with pytest.raises(ValueError, match="topology 'w' is already running"):
            cluster.check_topology("w", {}, spec)
        assert [w.split(";")[0] for w in cluster.warnings_of("w")] == [
            "component 'win' holds each tuple un-acked for up to 20 s (its time window)"]
        assert worker.conf["topology.submit.warnings"] == cluster.warnings_of("w")


# -- config files and KEY=VALUE ------------------------------------------------------------------
def test_config_arguments_are_files_or_pairs_and_pairs_win(tmp_path: Path) -> None:
    yaml_file = tmp_path / "a.yaml"
    yaml_file.write_text("topology.workers: 2\ntopology.debug: true\n")
    json_file = tmp_path / "b.json"
    json_file.write_text(json.dumps({"topology.workers": 3, "ui.port": 9000}))
    given = parse_config_args(["topology.workers=5", str(yaml_file), str(json_file)])
    assert given.files == {"topology.workers": 3, "topology.debug": True, "ui.port": 9000}
    assert given.merged() == {"topology.workers": 5, "topology.debug": True, "ui.port": 9000}
    with pytest.raises(ConfigError, match=r"'nofile.yaml' is neither an existing file \(YAML or "
                                          r"JSON\) nor KEY=VALUE"):
        parse_config_args(["nofile.yaml"])


def test_a_daemon_config_is_checked_when_loaded(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("STORMPY_CONF", raising=False)
    bad = tmp_path / "stormpy.yaml"
    bad.write_text("supervisor.slots.ports: [6700, http]\n")
    with pytest.raises(SettingError, match=r"^supervisor.slots.ports: must be a list of items, "
                                           r"each an integer in 1..65535, got \[6700, 'http'\]"):
        load_config(bad)


def test_the_default_file_is_read_only_when_no_file_is_named(tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("STORMPY_CONF", raising=False)
    (tmp_path / "stormpy.yaml").write_text("ui.port: 9001\nui.poll.secs: 1\n")
    (tmp_path / "other.yaml").write_text("ui.port: 9002\n")
    assert load_config_args(("ui.poll.secs=3",), ())["ui.port"] == 9001
    named = load_config_args(("other.yaml",), ("ui.port=9003",))
    assert named["ui.port"] == 9003 and named["ui.poll.secs"] == DEFAULTS["ui.poll.secs"]


# -- defaults come from the table only -------------------------------------------------------------
#: Files whose reads are exempt, with the reason.
EXEMPT = {
    # the topology layer may not import stormpy.config (import directions); the one default it
    # repeats is pinned to the table's by tests/unit/topology/test_topology_defaults.py (the others are
    # "when set" checks and the code dir of a process outside a worker)
    "topology/": "import directions",
}


def _constants(tree: ast.Module) -> dict[str, str]:
    """Module-level ``NAME = "some.key"`` assignments."""
    out = {}
    for node in tree.body:
        if (isinstance(node, ast.Assign) and len(node.targets) == 1
                and isinstance(node.targets[0], ast.Name) and isinstance(node.value, ast.Constant)
                and isinstance(node.value.value, str)):
            out[node.targets[0].id] = node.value.value
    return out


def _key_of(node: ast.AST, constants: dict[str, str]) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        name = node.value
    elif isinstance(node, ast.Name) and node.id in constants:
        name = constants[node.id]
    else:
        return None
    return name if name in {k.name for k in CORE_KEYS} else None


def _is_table_default(node: ast.AST) -> bool:
    """``DEFAULTS[...]``: the table's value."""
    return (isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name)
            and node.value.id == "DEFAULTS")


def inline_default_reads(path: Path) -> list[str]:
    """``conf.get(KEY, default)`` and ``conf.get(KEY) or default`` reads of a core key whose
    default is not the table's."""
    tree = ast.parse(path.read_text(), str(path))
    constants = _constants(tree)
    found = []
    or_operands: dict[int, ast.AST] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.BoolOp) and isinstance(node.op, ast.Or):
            for left, right in zip(node.values, node.values[1:], strict=False):
                or_operands[id(left)] = right
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr == "get" and node.args):
            continue
        key = _key_of(node.args[0], constants)
        if key is None:
            continue
        fallback = node.args[1] if len(node.args) > 1 else or_operands.get(id(node))
        if fallback is not None and not _is_table_default(fallback):
            where = path.relative_to(SRC) if path.is_relative_to(SRC) else path.name
            found.append(f"{where}:{node.lineno}: {key} read with the inline "
                         f"default {ast.unparse(fallback)}")
    return found


def test_no_module_reads_a_core_key_with_an_inline_default() -> None:
    found = []
    for path in sorted(SRC.rglob("*.py")):
        if not str(path.relative_to(SRC)).startswith(tuple(EXEMPT)):
            found += inline_default_reads(path)
    assert found == [], "read these with stormpy.config.setting(conf, key):\n" + "\n".join(found)


def test_the_scan_finds_an_inline_default(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text('KEY = "topology.workers"\n'
                      'def f(conf):\n'
                      '    return (conf.get("topology.spout.max.batch.size") or 1, conf.get(KEY, 2),\n'
                      '            conf.get("my.key") or 3, conf.get(KEY) or DEFAULTS[KEY])\n')
    assert sorted(line.split(": ", 1)[1] for line in inline_default_reads(sample)) == [
        "topology.spout.max.batch.size read with the inline default 1",
        "topology.workers read with the inline default 2"]
