"""The transactional topologies' configuration section (``transactional.*``, Storm's keys),
registered when :mod:`stormpy.transactional` is imported."""

from __future__ import annotations

from stormpy.config import ConfigKey, ConfigSection, register_section

__all__ = ["TRANSACTIONAL_CONFIG"]

TRANSACTIONAL_CONFIG = register_section(ConfigSection(
    name="transactional",
    prefix="transactional.",
    doc="Transactional topologies (stormpy.transactional): where the coordinator and emitter state "
        "lives.",
    keys=(
        ConfigKey("transactional.zookeeper.root", "/transactional",
                  "Znode under which transactional topologies keep their coordinator and emitter "
                  "state (one child per transactional id)."),
        ConfigKey("transactional.zookeeper.servers", None,
                  "ZooKeeper hosts of the transactional state; None means storm.zookeeper.servers."),
        ConfigKey("transactional.zookeeper.port", None,
                  "ZooKeeper port of the transactional state; None means storm.zookeeper.port."),
        ConfigKey("transactional.zookeeper.operation.timeout.secs", 2.0,
                  "Longest wait of one transactional state operation; while ZooKeeper is "
                  "unreachable the coordinator starts and commits nothing and retries."),
        ConfigKey("transactional.store", "zookeeper",
                  "Where transactional state lives: 'zookeeper', or 'memory' (in-process, lost "
                  "with the process; for tests of one-process topologies)."),
    ),
))
