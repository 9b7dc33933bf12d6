"""Kafka connector (the ``[kafka]`` extra): a KafkaSpout with storm-kafka-client's processing
guarantees, its offset manager and retry service.
"""

from stormpy.connectors.kafka.messages import KafkaSpoutMessageId, OffsetAndMetadata, TopicPartition
from stormpy.connectors.kafka.offset_manager import OffsetManager
from stormpy.connectors.kafka.retry import RetryExponentialBackoff

__all__ = ["KafkaSpoutMessageId", "OffsetAndMetadata", "OffsetManager", "RetryExponentialBackoff",
           "TopicPartition"]
