"""The Kafka-protocol test broker, re-exported for tests from :mod:`stormpy.local.kafka_broker`
(where ``stormpy dev-kafka`` finds it too)."""

from stormpy.local.kafka_broker import (
    BROKER_ENV,
    INSTALL_HINT,
    KafkaBroker,
    KafkaBrokerNotFound,
    KafkaBrokerStartError,
    find_broker_binary,
)

__all__ = ["BROKER_ENV", "INSTALL_HINT", "KafkaBroker", "KafkaBrokerNotFound", "KafkaBrokerStartError",
           "find_broker_binary"]
