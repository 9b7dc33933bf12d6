"""Kafka connector (the ``[kafka]`` extra): storm-kafka-client's KafkaSpout on the public API.

* :class:`KafkaSpoutConfig` — every setting with Storm's defaults; :class:`ProcessingGuarantee`,
  :class:`FirstPollOffsetStrategy`.
* :class:`KafkaSpout` — ``builder.set_spout("kafka", KafkaSpout.of(config), n)``.
* :class:`OffsetManager`, :class:`RetryExponentialBackoff` — usable on their own.
* :class:`RecordTranslator` (record → values/stream), :class:`KafkaTupleListener` hooks.
* :class:`KafkaBolt` with :class:`KafkaBoltConfig` — writes tuples to a topic, acking each one
  once the broker confirmed it; :class:`TupleToKafkaMapper` (tuple → key/value).

confluent-kafka is imported only when a spout opens (a bolt prepares); without it the error names
``pip install 'stormpy-runtime[kafka]'``. See docs/kafka.md.
"""

from stormpy._public import publish
from stormpy.connectors.kafka._assignment import assign_round_robin, commit_metadata, start_offset
from stormpy.connectors.kafka._bolt import KafkaBolt
from stormpy.connectors.kafka._bolt_config import (
    FieldNameBasedTupleToKafkaMapper,
    KafkaBoltConfig,
    TupleToKafkaMapper,
)
from stormpy.connectors.kafka._client import (
    KAFKA_EXTRA,
    KafkaUnavailableError,
    require_confluent_kafka,
)
from stormpy.connectors.kafka._config import (
    FirstPollOffsetStrategy,
    KafkaConfigError,
    KafkaSpoutConfig,
    ProcessingGuarantee,
)
from stormpy.connectors.kafka._messages import KafkaSpoutMessageId, OffsetAndMetadata, TopicPartition
from stormpy.connectors.kafka._offset_manager import OffsetManager
from stormpy.connectors.kafka._opaque import KafkaOpaqueSpout
from stormpy.connectors.kafka._retry import RetryExponentialBackoff
from stormpy.connectors.kafka._spout import KafkaRecordError, KafkaSpout
from stormpy.connectors.kafka._transactional_sink import KafkaTransactionalConfig
from stormpy.connectors.kafka._translator import (
    DefaultRecordTranslator,
    KafkaRecord,
    KafkaTuple,
    KafkaTupleListener,
    RecordTranslator,
    StringRecordTranslator,
)
from stormpy.connectors.kafka._trident_sink import (
    KafkaTransactionalCommitterBolt,
    KafkaTransactionalStateFactory,
    KafkaTransactionalUpdater,
)

__all__ = [
    "KAFKA_EXTRA", "DefaultRecordTranslator", "FieldNameBasedTupleToKafkaMapper",
    "FirstPollOffsetStrategy", "KafkaBolt", "KafkaBoltConfig", "KafkaConfigError",
    "KafkaOpaqueSpout", "KafkaRecord", "KafkaRecordError", "KafkaSpout", "KafkaSpoutConfig",
    "KafkaTransactionalCommitterBolt", "KafkaTransactionalConfig",
    "KafkaTransactionalStateFactory", "KafkaTransactionalUpdater",
    "KafkaSpoutMessageId", "KafkaTuple", "KafkaTupleListener", "KafkaUnavailableError",
    "OffsetAndMetadata", "OffsetManager", "ProcessingGuarantee", "RecordTranslator",
    "RetryExponentialBackoff", "StringRecordTranslator", "TopicPartition", "TupleToKafkaMapper",
    "assign_round_robin",
    "commit_metadata", "require_confluent_kafka", "start_offset",
]

publish(__name__, globals())
