"""The one builder of a ZooKeeper connect string (``"h1:2181,h2:2182"``).

:func:`hosts_from_config` contract: the servers are ``servers`` when given, else
``storm.zookeeper.servers`` of ``conf``, else that key's default; the port is ``port`` when given,
else ``storm.zookeeper.port``, else its default (both defaults from :mod:`stormpy.config`, never
written here). Servers may be a list or a comma-separated string; an entry that already names a
port (``"zk1:2182"``) keeps it, the others get the port. An empty server list or a port that is
not an integer in 1..65535 raises :class:`~stormpy.config.SettingError` naming the setting (the
name the caller passes as ``servers_setting`` / ``port_setting`` when it gave its own values).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from stormpy.config import DEFAULTS, SettingError

__all__ = ["hosts_from_config"]

SERVERS_KEY = "storm.zookeeper.servers"
PORT_KEY = "storm.zookeeper.port"


def hosts_from_config(conf: Mapping[str, Any] | None = None, *,
                      servers: str | Iterable[str] | None = None, port: int | str | None = None,
                      servers_setting: str | None = None, port_setting: str | None = None) -> str:
    """``host:port,...`` (see the module docstring)."""
    conf = conf or {}
    if servers:
        servers_name = servers_setting or SERVERS_KEY
    else:
        servers, servers_name = conf.get(SERVERS_KEY) or DEFAULTS[SERVERS_KEY], SERVERS_KEY
    if port is not None and port != "":
        port_name = port_setting or PORT_KEY
    else:
        port, port_name = conf.get(PORT_KEY) or DEFAULTS[PORT_KEY], PORT_KEY
    entries = servers.split(",") if isinstance(servers, str) else list(servers)
    hosts = [str(s).strip() for s in entries if str(s).strip()]
    if not hosts:
        raise SettingError(servers_name, f"names no ZooKeeper server: {servers!r}")
    number = _port(port, port_name)
    return ",".join(h if ":" in h else f"{h}:{number}" for h in hosts)


def _port(value: Any, setting: str) -> int:
    try:
        number = int(value)
    except (TypeError, ValueError):
        number = 0
    if isinstance(value, bool) or str(number) != str(value).strip() or not 1 <= number <= 65535:
        raise SettingError(setting, f"must be a port number in 1..65535, got {value!r}")
    return number
