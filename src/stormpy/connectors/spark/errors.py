"""Checking that Spark can run here: PySpark/PyArrow importable and a Java runtime present."""

from __future__ import annotations

import importlib
import os
import shutil
from pathlib import Path

SPARK_EXTRA = "pip install 'stormpy-runtime[spark]'"
JAVA_HINT = ("install a Java 17+ runtime (for example `apt-get install openjdk-17-jre-headless`) "
             "and put `java` on PATH, or set JAVA_HOME")


class SparkUnavailableError(RuntimeError):
    """Spark cannot run in this process: the ``[spark]`` extra or Java is missing.

    The message says what is missing and how to install it.
    """


def require_spark_packages() -> None:
    """Raise SparkUnavailableError naming the ``[spark]`` extra unless PySpark and PyArrow import."""
    for module in ("pyspark", "pyarrow"):
        try:
            importlib.import_module(module)
        except ImportError as exc:
            raise SparkUnavailableError(
                f"Spark bolts need the optional Spark dependencies, but {module!r} cannot be "
                f"imported ({exc}); install them with: {SPARK_EXTRA}") from exc


def find_java() -> str | None:
    """The ``java`` executable Spark's launcher would use: ``$JAVA_HOME/bin/java`` when
    JAVA_HOME is set, else ``java`` on PATH; None when there is none."""
    home = os.environ.get("JAVA_HOME")
    if home:
        candidate = Path(home) / "bin" / "java"
        return str(candidate) if os.access(candidate, os.X_OK) else None
    return shutil.which("java")


def require_java() -> str:
    """Return the ``java`` executable or raise SparkUnavailableError saying how to get one."""
    java = find_java()
    if java is None:
        home = os.environ.get("JAVA_HOME")
        where = (f"JAVA_HOME={home} has no executable bin/java" if home
                 else "`java` is not on PATH and JAVA_HOME is not set")
        raise SparkUnavailableError(f"Spark bolts need a Java runtime for Spark's JVM, but {where}; "
                                    f"{JAVA_HINT}")
    return java


def require_spark() -> None:
    """Check everything a local Spark driver needs; SparkUnavailableError says what is missing."""
    require_spark_packages()
    require_java()
