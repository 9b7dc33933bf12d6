"""Local mode: a whole topology inside this process (:class:`LocalCluster`, ``stormpy local``),
Nimbus and supervisors as subprocesses on this machine (:class:`ProcessCluster`,
``stormpy dev-cluster``), and the development servers a topology may need beside them:
:class:`RedisServer` (``stormpy dev-redis``), :class:`SparkStandalone` (``stormpy dev-spark``)
and a Kafka broker (:func:`start_broker` picks one, ``stormpy dev-kafka``).

Production code (the CLI runs it), built on the worker and the Nimbus client like a cluster is;
the public test kit :mod:`stormpy.testing` re-exports :class:`LocalCluster`. How these processes
are found and ended (the process table, SIGTERM then SIGKILL) is internal.
"""

from stormpy._public import publish
from stormpy.local._cluster import LocalCluster, TopologyNotFound
from stormpy.local._dev_kafka import start_broker
from stormpy.local._kafka_broker import KafkaBroker
from stormpy.local._processes import ProcessCluster
from stormpy.local._redis_server import RedisServer
from stormpy.local._spark_cluster import SparkStandalone

__all__ = ["KafkaBroker", "LocalCluster", "ProcessCluster", "RedisServer", "SparkStandalone",
           "TopologyNotFound", "start_broker"]

publish(__name__, globals())
