"""Finding the ``java`` executable: one rule for everything stormpy launches on a JVM.

The rule (the one of ZooKeeper's ``zkEnv.sh`` and Spark's launcher): when ``JAVA_HOME`` is set,
``$JAVA_HOME/bin/java`` and nothing else (a ``JAVA_HOME`` without an executable ``bin/java`` is a
mistake to report, not to paper over with another Java); otherwise ``java`` on ``PATH``.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

__all__ = ["find_java", "missing_java_reason"]


def find_java() -> str | None:
    """The ``java`` executable by the module's rule, or None when there is none."""
    home = os.environ.get("JAVA_HOME")
    if home:
        candidate = Path(home) / "bin" / "java"
        return str(candidate) if candidate.is_file() and os.access(candidate, os.X_OK) else None
    return shutil.which("java")


def missing_java_reason() -> str:
    """Why :func:`find_java` finds nothing, for error messages (call it when it returned None)."""
    home = os.environ.get("JAVA_HOME")
    if home:
        return f"JAVA_HOME={home} has no executable bin/java"
    return "`java` is not on PATH and JAVA_HOME is not set"
