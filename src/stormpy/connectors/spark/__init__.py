"""Spark bolts: hand micro-batches of tuples to Apache Spark (the ``[spark]`` extra).

Subclass ``SparkBatchBolt`` and implement ``process_batch(df, batch_id)``; ``df`` is a Spark
DataFrame of the batch (columns = the input stream's fields). ``SparkCommitterBolt`` is the
committer of transactional topologies that writes each committed batch to Parquet exactly once.
Every bolt in a worker process shares one SparkSession (``get_spark``), configured from the
topology config's ``spark.*`` keys (the ``SPARK_CONFIG`` section, registered with
:func:`stormpy.config.register_section`). PySpark is imported lazily: importing this package works
without it; preparing a Spark bolt without PySpark or Java raises ``SparkUnavailableError`` saying
what to install. On a standalone cluster (``spark.master=spark://…``) the topology's code is
shipped to the executors and a stuck batch is bounded by ``spark.stormpy.batch.timeout.secs``
(docs/spark.md).
"""

from stormpy._batching import CLOSED_BY_COUNT, CLOSED_BY_IDLE, CLOSED_BY_TIME, BatchSource
from stormpy._public import publish
from stormpy.connectors.spark._arrow import BatchConversionError, batch_dataframe, rows_to_arrow
from stormpy.connectors.spark._batching import BatchInfo
from stormpy.connectors.spark._bolt import SparkBatchBolt
from stormpy.connectors.spark._committer import SparkCommitterBolt
from stormpy.connectors.spark._errors import (
    SPARK_EXTRA,
    SparkBatchTimeout,
    SparkMasterUnreachable,
    SparkUnavailableError,
    require_spark,
)
from stormpy.connectors.spark._session import (
    get_spark,
    release_spark,
    reset_spark,
    retain_spark,
    ship_code,
    spark_running,
    spark_session,
    spark_settings,
    stop_spark,
)
from stormpy.connectors.spark._settings import SPARK_CONFIG

__all__ = [
    "CLOSED_BY_COUNT", "CLOSED_BY_IDLE", "CLOSED_BY_TIME", "SPARK_CONFIG", "SPARK_EXTRA",
    "BatchConversionError", "BatchInfo", "BatchSource", "SparkBatchBolt", "SparkCommitterBolt",
    "SparkBatchTimeout", "SparkMasterUnreachable", "SparkUnavailableError",
    "batch_dataframe", "get_spark", "release_spark", "require_spark", "reset_spark", "retain_spark",
    "rows_to_arrow", "ship_code", "spark_running", "spark_session", "spark_settings", "stop_spark",
]

publish(__name__, globals())
