"""The Kafka brokers of the tests, re-exported from :mod:`stormpy.local` (where ``stormpy dev-kafka``
finds them too): Apache Kafka (KRaft, what the tests run against) and tansu (the fallback of
``stormpy dev-kafka``), with the admin helpers."""

from stormpy.local._apache_kafka import (
    KAFKA_HOME_ENV,
    KAFKA_INSTALL_HINT,
    QUICK_START_JVM_OPTIONS,
    ApacheKafkaBroker,
    apache_kafka_missing,
    find_kafka_home,
)
from stormpy.local._dev_kafka import BROKER_CHOICES, choose_broker, start_broker
from stormpy.local._kafka_broker import (
    BROKER_ENV,
    TANSU_INSTALL_HINT,
    KafkaBroker,
    KafkaBrokerNotFound,
    KafkaBrokerStartError,
    TansuBroker,
    create_partitions,
    create_topic,
    find_broker_binary,
)

__all__ = ["BROKER_CHOICES", "BROKER_ENV", "KAFKA_HOME_ENV", "KAFKA_INSTALL_HINT", "QUICK_START_JVM_OPTIONS",
           "TANSU_INSTALL_HINT",
           "ApacheKafkaBroker",
           "KafkaBroker", "KafkaBrokerNotFound", "KafkaBrokerStartError", "TansuBroker",
           "apache_kafka_missing", "choose_broker", "create_partitions", "create_topic",
           "find_broker_binary", "find_kafka_home", "start_broker"]
