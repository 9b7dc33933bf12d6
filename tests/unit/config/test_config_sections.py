"""Connector config sections: a connector declares its keys and prefix once, and the core
(defaults, the worker's conf layering) follows without naming it."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from stormpy import config
from stormpy.config import ConfigError, ConfigKey, ConfigSection, register_section
from stormpy.topology._spec import SPOUT, ComponentSpec, TopologySpec
from stormpy.worker.process import import_components, worker_conf


@pytest.fixture
def registry(monkeypatch: pytest.MonkeyPatch) -> None:
    """A private copy of the registry, so sections registered by a test do not leak."""
    monkeypatch.setattr(config, "_SECTIONS", dict(config._SECTIONS))
    monkeypatch.setattr(config, "KEYS", dict(config.KEYS))
    monkeypatch.setattr(config, "DEFAULTS", dict(config.DEFAULTS))


def kafka_like() -> ConfigSection:
    return ConfigSection("kafkatest", "kafkatest.", "A test connector.", (
        ConfigKey("kafkatest.bootstrap.servers", "localhost:9092", "Brokers to start from."),
        ConfigKey("kafkatest.poll.ms", 200, "Longest poll."),
    ))


def test_a_section_adds_its_keys_defaults_and_prefix(registry: None) -> None:
    section = register_section(kafka_like())
    assert config.sections()["kafkatest"] is section
    assert config.DEFAULTS["kafkatest.poll.ms"] == 200
    assert config.KEYS["kafkatest.bootstrap.servers"].doc == "Brokers to start from."
    assert "kafkatest." in config.topology_prefixes()
    assert config.merged({})["kafkatest.poll.ms"] == 200
    assert register_section(kafka_like()) is section  # idempotent for an equal section


def test_the_worker_takes_a_registered_prefix_from_the_topology(registry: None) -> None:
    daemon = {"kafkatest.poll.ms": 999, "storm.zookeeper.servers": ["zk"]}
    topology = {"kafkatest.poll.ms": 50, "storm.zookeeper.servers": ["elsewhere"]}
    assert worker_conf(daemon, topology)["kafkatest.poll.ms"] == 999  # not registered yet
    register_section(kafka_like())
    conf = worker_conf(daemon, topology)
    assert conf["kafkatest.poll.ms"] == 50
    assert conf["storm.zookeeper.servers"] == ["zk"]


@pytest.mark.parametrize(("section", "problem"), [
    (ConfigSection("x", "topology.x.", "doc"), "overlaps the prefix 'topology.'"),
    (ConfigSection("x", "storm", "doc"), "must be a non-empty name ending with '.'"),
    (ConfigSection("x", "x.", "doc", (ConfigKey("y.a", 1, "doc"),)), "'y.a' lies outside"),
    (ConfigSection("x", "x.", "doc", (ConfigKey("x.a", 1, ""),)), "'x.a' has no description"),
    (ConfigSection("x", "x.", ""), "has no description"),
])
def test_bad_sections_are_refused_naming_the_problem(registry: None, section: ConfigSection,
                                                       problem: str) -> None:
    with pytest.raises(ConfigError, match=f"config section 'x'.*{problem}"):
        register_section(section)
    assert "x" not in config.sections()


def test_two_sections_cannot_share_a_name_or_prefix(registry: None) -> None:
    register_section(kafka_like())
    with pytest.raises(ConfigError, match="already registered"):
        register_section(ConfigSection("kafkatest", "other.", "doc"))
    with pytest.raises(ConfigError, match="overlaps the prefix 'kafkatest.'"):
        register_section(ConfigSection("kafka2", "kafkatest.sub.", "doc"))


def test_the_spark_connector_registers_its_section() -> None:
    from stormpy.connectors.spark import SPARK_CONFIG

    assert config.sections()["spark"] is SPARK_CONFIG
    assert config.DEFAULTS["spark.master"] == "local[*]"
    assert "spark." in config.topology_prefixes()
    assert not any(k.startswith("spark.") for k in (key.name for key in config._KEYS))


def test_the_worker_imports_components_before_layering_conf(registry: None, tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "sectioned_spout.py").write_text(
        "from stormpy.config import ConfigKey, ConfigSection, register_section\n"
        "from stormpy.topology import Spout\n"
        "register_section(ConfigSection('sectioned', 'sectioned.', 'doc',\n"
        "                               (ConfigKey('sectioned.a', 1, 'doc'),)))\n"
        "class S(Spout):\n"
        "    outputs = ['x']\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "sectioned_spout", raising=False)
    spec = TopologySpec({
        "s": ComponentSpec("s", SPOUT, "sectioned_spout:S"),
        "broken": ComponentSpec("broken", SPOUT, "no_such_module_here:S"),  # the Worker reports it
    })
    assert "sectioned." not in config.topology_prefixes()
    import_components(spec)
    assert "sectioned." in config.topology_prefixes()
