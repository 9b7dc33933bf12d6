"""The Spark connector's configuration section (``spark.*``), registered when the connector is
imported. Every ``spark.*`` key of a topology's config reaches its SparkSession verbatim
(:func:`~stormpy.connectors.spark.session.spark_settings`); these are the documented ones."""

from __future__ import annotations

from stormpy.config import ConfigKey, ConfigSection, register_section

__all__ = ["DEFAULT_MASTER", "SPARK_CONFIG"]

#: Where Spark bolts run their jobs unless ``spark.master`` says otherwise: in the worker process.
DEFAULT_MASTER = "local[*]"

SPARK_CONFIG = register_section(ConfigSection(
    name="spark",
    prefix="spark.",
    doc="Spark bolts (stormpy.connectors.spark): the worker process's SparkSession. Any other "
        "spark.* key is passed to Spark as it is.",
    keys=(
        ConfigKey("spark.master", DEFAULT_MASTER,
                  "Spark master URL used by Spark bolts (local[*], spark://..., yarn, k8s://...)."),
        ConfigKey("spark.app.name", None, "Spark application name; defaults to the topology name."),
    ),
))
