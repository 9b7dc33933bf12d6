"""Shipping a topology's code to Spark executors, and checking a standalone master answers.

* :func:`code_dir_of` is the directory to ship for a topology config: ``spark.stormpy.code.dir``,
  else the worker's ``worker.code.dir`` (set by cluster worker processes), unless
  ``spark.stormpy.ship.code`` is false; None when there is nothing to ship.
* :func:`zip_code` writes a deterministic zip of a directory's files (no ``__pycache__``, no
  ``.pyc``; fixed timestamps) named ``stormpy-code-<sha256 prefix of its content>.zip``: the same
  code gives the same file, a changed bundle a new one.
* :func:`probe_master` raises SparkMasterUnreachable unless one of the hosts of a
  ``spark://h1:p1[,h2:p2]`` URL accepts a TCP connection within the timeout.
"""

from __future__ import annotations

import hashlib
import io
import os
import socket
import zipfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from stormpy.config import SettingError
from stormpy.connectors.spark._errors import SparkMasterUnreachable
from stormpy.connectors.spark._settings import CODE_DIR_KEY, SHIP_CODE_KEY

__all__ = ["code_dir_of", "probe_master", "zip_code"]

_EPOCH = (1980, 1, 1, 0, 0, 0)


def _enabled(value: Any) -> bool:
    if isinstance(value, str):
        return value.strip().lower() not in ("false", "0", "no", "off", "")
    return value is None or bool(value)


def code_dir_of(conf: Mapping[str, Any] | None) -> str | None:
    """The directory whose code goes to executors under ``conf`` (see the module contract)."""
    conf = conf or {}
    if not _enabled(conf.get(SHIP_CODE_KEY, True)):
        return None
    where = conf.get(CODE_DIR_KEY) or conf.get("worker.code.dir")
    if not where:
        return None
    path = Path(str(where))
    if not path.is_dir():
        raise SettingError(CODE_DIR_KEY if conf.get(CODE_DIR_KEY) else "worker.code.dir",
                           f"{where!r} is not a directory; cannot ship the topology's code to Spark")
    return str(path.resolve())


def zip_code(code_dir: str | os.PathLike[str], out_dir: str | os.PathLike[str]) -> str:
    """Zip ``code_dir`` into ``out_dir`` (module contract); return the zip's path."""
    root = Path(code_dir)
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for path in sorted(root.rglob("*")):
            rel = path.relative_to(root)
            if (not path.is_file() or "__pycache__" in rel.parts or path.suffix == ".pyc"
                    or any(p.startswith(".") for p in rel.parts)):
                continue
            info = zipfile.ZipInfo(rel.as_posix(), date_time=_EPOCH)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            zf.writestr(info, path.read_bytes())
    data = buf.getvalue()
    out = Path(out_dir) / f"stormpy-code-{hashlib.sha256(data).hexdigest()[:16]}.zip"
    if not out.exists():
        tmp = out.with_suffix(".tmp")
        tmp.write_bytes(data)
        os.replace(tmp, out)
    return str(out)


def probe_master(url: str, timeout_secs: float) -> None:
    """Raise SparkMasterUnreachable unless a master of ``url`` (``spark://…``) accepts a TCP
    connection within ``timeout_secs``."""
    hosts = url.removeprefix("spark://").split(",")
    errors = []
    for hostport in hosts:
        host, _, port = hostport.strip().rpartition(":")
        if not host or not port.isdigit():
            raise SettingError("spark.master", f"{url!r}: {hostport!r} is not host:port")
        try:
            with socket.create_connection((host, int(port)), timeout=timeout_secs):
                return
        except OSError as exc:
            errors.append(f"{hostport}: {exc}")
    raise SparkMasterUnreachable(f"the Spark master {url} is unreachable ({'; '.join(errors)})")
