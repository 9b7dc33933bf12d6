"""Connectors: spouts and bolts for external systems, built only on the public topology API.

Each connector is a subpackage whose third-party dependencies are optional extras, imported
lazily; using a connector without its extra raises an error naming the ``pip install`` to run.

* ``stormpy.connectors.spark`` — bolts that hand micro-batches to Apache Spark (``[spark]``).
* ``stormpy.connectors.kafka`` — storm-kafka-client's spout (offsets committed to Kafka under a
  processing guarantee) and bolt (``[kafka]``).
* ``stormpy.connectors.kinesis`` — a spout reading Amazon Kinesis streams, with checkpoints in
  ZooKeeper (``[kinesis]``).

Shared by the log spouts: ``partitions`` (which partitions or shards a spout task reads) and
``offsets`` (the acked prefix the Kafka spout commits; the Kinesis tracker differs on purpose, see
both). Each connector's settings classes follow the one style of :mod:`stormpy._settings`.
"""

__all__: list[str] = []  # each connector is imported from its own subpackage
