"""Checking that Spark can run here: PySpark/PyArrow importable and a Java runtime present."""

from __future__ import annotations

import importlib

from stormpy.host.java import find_java, missing_java_reason

SPARK_EXTRA = "pip install 'stormpy-runtime[spark]'"
JAVA_HINT = ("install a Java 17+ runtime (for example `apt-get install openjdk-17-jre-headless`) "
             "and put `java` on PATH, or set JAVA_HOME")


class SparkUnavailableError(RuntimeError):
    """Spark cannot run in this process: the ``[spark]`` extra or Java is missing.

    The message says what is missing and how to install it.
    """


class SparkMasterUnreachable(RuntimeError):
    """The configured standalone Spark master does not accept connections (a batch that needs a
    new SparkSession fails with it; reliable spouts replay its tuples)."""


class SparkBatchTimeout(TimeoutError):
    """A Spark bolt's batch ran longer than ``spark.stormpy.batch.timeout.secs``."""


def require_spark_packages() -> None:
    """Raise SparkUnavailableError naming the ``[spark]`` extra unless PySpark and PyArrow import."""
    for module in ("pyspark", "pyarrow"):
        try:
            importlib.import_module(module)
        except ImportError as exc:
            raise SparkUnavailableError(
                f"Spark bolts need the optional Spark dependencies, but {module!r} cannot be "
                f"imported ({exc}); install them with: {SPARK_EXTRA}") from exc


def require_java() -> str:
    """Return the ``java`` executable (:func:`stormpy.host.java.find_java`, the rule Spark's
    launcher follows) or raise SparkUnavailableError saying how to get one."""
    java = find_java()
    if java is None:
        raise SparkUnavailableError(f"Spark bolts need a Java runtime for Spark's JVM, but "
                                    f"{missing_java_reason()}; {JAVA_HINT}")
    return java


def require_spark() -> None:
    """Check everything a local Spark driver needs; SparkUnavailableError says what is missing."""
    require_spark_packages()
    require_java()
