"""Connectors: spouts and bolts for external systems, built only on the public topology API.

Each connector is a subpackage whose third-party dependencies are optional extras, imported
lazily; using a connector without its extra raises an error naming the ``pip install`` to run.

* ``stormpy.connectors.spark`` — bolts that hand micro-batches to Apache Spark (``[spark]``).
* ``stormpy.connectors.kinesis`` — a spout reading Amazon Kinesis streams, with checkpoints in
  ZooKeeper (``[kinesis]``).
"""
