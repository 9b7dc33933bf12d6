"""Every configuration key stormpy understands, with its default and meaning.

The core keys (``topology.*``, ``storm.*``, ``nimbus.*``, ``supervisor.*``, ``worker.*``,
``dev.*``, ``ui.*``) are the table of :mod:`stormpy.config.keys`; this module holds the registry
built from it, the errors, the loading of config files and overrides, and the readers of defaults
used in several places. A connector (``spark.*``, ``kafka.*``, ...) declares its own keys in a
:class:`ConfigSection` and registers it with :func:`register_section` when its package is
imported; its keys then join :data:`KEYS` and :data:`DEFAULTS`, and its prefix joins
:func:`topology_prefixes` (the keys a topology sets for its workers over the daemon's values).
No core module names a connector's keys.

Keys use Apache Storm's names wherever stormpy has the same concept, so a Storm user's
``storm.yaml`` habits carry over. A topology's configuration is the cluster defaults, then the
daemon's ``stormpy.yaml``, then the topology's own config, then per-component config (for the keys
that Storm allows per component). ``load_config`` builds the daemon-side map; ``parse_override``
turns a ``-c key=value`` command-line argument into a typed pair.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from stormpy._public import publish
from stormpy.config.errors import ConfigError, SettingError
from stormpy.config.keys import CORE_KEYS, ConfigKey

__all__ = ["COMPONENT_KEYS", "CORE_PREFIXES", "DEFAULTS", "KEYS", "ConfigArgs", "ConfigError",
           "ConfigKey", "ConfigSection", "SettingError", "check_value", "check_values",
           "load_config", "load_config_args", "local_dir", "log_dir", "merged",
           "message_timeout_secs", "parse_config_args", "parse_override", "parse_overrides",
           "parse_value", "read_config_file", "redacted", "register_section", "rpc_auth_token",
           "sections", "setting", "topology_prefixes"]

#: The core keys (:mod:`stormpy.config.keys`).
_KEYS: list[ConfigKey] = list(CORE_KEYS)

#: Every known key: the core ones and those of the registered sections (filled in place).
KEYS: dict[str, ConfigKey] = {k.name: k for k in _KEYS}
#: Every known key's default (filled in place as sections register).
DEFAULTS: dict[str, Any] = {k.name: k.default for k in _KEYS}

#: Prefixes of the core keys; a section may not claim them.
CORE_PREFIXES = ("topology.", "storm.", "nimbus.", "supervisor.", "worker.", "dev.", "ui.")


@dataclass(frozen=True)
class ConfigSection:
    """The configuration of one optional part (a connector): every key starts with ``prefix``.

    ``keys`` are the documented keys with defaults and meaning; other keys under the prefix may be
    passed through by the connector (Spark takes every ``spark.*`` key verbatim). A topology's
    keys under the prefix override the daemon's in its workers, like its ``topology.*`` keys.
    """

    name: str
    prefix: str
    doc: str
    keys: tuple[ConfigKey, ...] = ()


_SECTIONS: dict[str, ConfigSection] = {}


def register_section(section: ConfigSection) -> ConfigSection:
    """Add ``section``'s keys to :data:`KEYS` / :data:`DEFAULTS` and its prefix to
    :func:`topology_prefixes`; returns it. Registering an equal section again does nothing.

    ConfigError naming the section when its prefix does not end with ``.``, overlaps a core
    prefix or another section's, a key lies outside the prefix or has no meaning, or another
    section already uses the name.
    """
    what = f"config section {section.name!r}"
    known = _SECTIONS.get(section.name)
    if known is not None:
        if known == section:
            return known
        raise ConfigError(f"{what} is already registered with other keys or prefix")
    prefix = section.prefix
    if not section.name or not prefix.endswith(".") or len(prefix) < 2:
        raise ConfigError(f"{what}: prefix {prefix!r} must be a non-empty name ending with '.'")
    for other in (*CORE_PREFIXES, *(s.prefix for s in _SECTIONS.values())):
        if prefix.startswith(other) or other.startswith(prefix):
            raise ConfigError(f"{what}: prefix {prefix!r} overlaps the prefix {other!r} in use")
    if not section.doc:
        raise ConfigError(f"{what} has no description")
    for key in section.keys:
        if not key.name.startswith(prefix) or key.name == prefix:
            raise ConfigError(f"{what}: key {key.name!r} lies outside its prefix {prefix!r}")
        if not key.doc:
            raise ConfigError(f"{what}: key {key.name!r} has no description")
    _SECTIONS[section.name] = section
    for key in section.keys:
        KEYS[key.name] = key
        DEFAULTS[key.name] = key.default
    return section


def sections() -> dict[str, ConfigSection]:
    """The registered sections by name."""
    return dict(_SECTIONS)


def topology_prefixes() -> tuple[str, ...]:
    """Key prefixes a topology's config sets for its workers over the daemon's values: its own
    ``topology.*`` and those of every registered section (a daemon conf may carry a connector's
    defaults, which must not mask what the topology asked for)."""
    return ("topology.", *sorted(s.prefix for s in _SECTIONS.values()))

#: Keys a component's own config may override (Storm's per-component keys).
COMPONENT_KEYS = frozenset({
    "topology.tick.tuple.freq.secs",
    "topology.max.spout.pending",
    "topology.debug",
    "topology.spout.max.batch.size",
    "topology.multilang.serializer",
    "topology.shellbolt.max.pending",
})


def setting(conf: Mapping[str, Any], key: str) -> Any:
    """``conf[key]``, or the key's default from the table when ``conf`` lacks it or holds None.

    The one way to read a known key with its default (a source scan test refuses
    ``conf.get(key) or 5``): the value itself was checked at submit or load
    (:mod:`stormpy.config.validate`), so it is used as it is."""
    value = conf.get(key)
    return DEFAULTS[key] if value is None else value


def check_value(key: str, value: Any, component: str | None = None) -> Any:
    """``value`` when the table's check of ``key`` accepts it (None, which means unset, as
    Storm's validators let null through; any value for an unknown key or a connector key without
    check); SettingError naming the key (and ``component``) otherwise."""
    known = KEYS.get(key)
    if known is None or known.check is None or value is None:
        return value
    try:
        return known.check(key, value)
    except SettingError as exc:
        if component is None:
            raise
        raise SettingError(exc.setting, f"component {component!r}: {exc.problem}") from None


def check_values(conf: Mapping[str, Any], component: str | None = None) -> None:
    """:func:`check_value` for every key of ``conf``, in sorted order (the first bad one is
    reported)."""
    for key in sorted(conf):
        check_value(key, conf[key], component)


def parse_value(text: str) -> Any:
    """Parse a command-line value the way YAML would (``5`` → 5, ``true`` → True, ``[1,2]`` → list)."""
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError:
        return text


def parse_override(arg: str) -> tuple[str, Any]:
    """Turn ``key=value`` into ``(key, typed value)``; raise ConfigError naming the argument."""
    if "=" not in arg:
        raise ConfigError(f"config override {arg!r} must look like key=value")
    key, _, value = arg.partition("=")
    key = key.strip()
    if not key:
        raise ConfigError(f"config override {arg!r} has an empty key")
    return key, parse_value(value)


def parse_overrides(args: Iterable[str]) -> dict[str, Any]:
    """Parse several ``key=value`` arguments into a dict (later ones win)."""
    return dict(parse_override(a) for a in args)


@dataclass(frozen=True)
class ConfigArgs:
    """The ``--config`` / ``-c`` arguments of a command: each is a path to an existing YAML or
    JSON file, or ``KEY=VALUE``. ``files`` holds the files' keys (later files win), ``pairs`` the
    ``KEY=VALUE`` ones (later win); a pair wins over a file."""

    files: dict[str, Any]
    pairs: dict[str, Any]
    file_given: bool

    def merged(self) -> dict[str, Any]:
        """The files' keys, then the pairs over them."""
        return {**self.files, **self.pairs}


def parse_config_args(args: Iterable[str] | str | None) -> ConfigArgs:
    """Sort ``--config`` / ``-c`` arguments into files and ``KEY=VALUE`` pairs (see
    :class:`ConfigArgs`): an argument naming an existing file is read as one (YAML, which JSON
    is), else it must be ``KEY=VALUE``; ConfigError naming the argument or file otherwise."""
    if args is None:
        args = ()
    elif isinstance(args, str):
        args = (args,)
    files: dict[str, Any] = {}
    pairs: dict[str, Any] = {}
    file_given = False
    for arg in args:
        if Path(arg).is_file():
            files.update(read_config_file(arg))
            file_given = True
        elif "=" in arg:
            key, value = parse_override(arg)
            pairs[key] = value
        else:
            raise ConfigError(f"config argument {arg!r} is neither an existing file (YAML or JSON) "
                              "nor KEY=VALUE")
    return ConfigArgs(files, pairs, file_given)


def load_config_args(*args: Iterable[str] | str | None) -> dict[str, Any]:
    """A command's config from its ``--config`` / ``-c`` arguments (:func:`parse_config_args`):
    the defaults, then the files given (else ``$STORMPY_CONF``, else ``./stormpy.yaml`` if
    present, as :func:`load_config`), then the ``KEY=VALUE`` pairs; checked like
    :func:`load_config`."""
    parsed = [parse_config_args(a) for a in args]
    files = {k: v for p in parsed for k, v in p.files.items()}
    pairs = {k: v for p in parsed for k, v in p.pairs.items()}
    if not any(p.file_given for p in parsed):
        return load_config(None, pairs)
    return load_config(None, {**files, **pairs}, default_file=False)


def read_config_file(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Read a ``stormpy.yaml``; raise ConfigError naming the file when it is not a YAML mapping."""
    p = Path(path)
    try:
        data = yaml.safe_load(p.read_text()) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise ConfigError(f"cannot read config file {p}: {exc}") from exc
    if not isinstance(data, dict):
        raise ConfigError(f"config file {p} must hold a mapping of keys to values")
    return data


def load_config(path: str | os.PathLike[str] | None = None,
                overrides: Mapping[str, Any] | None = None, *,
                default_file: bool = True) -> dict[str, Any]:
    """Defaults, then the YAML file (``path``, else ``$STORMPY_CONF``, else ``./stormpy.yaml`` if
    present; neither with ``default_file=False``), then ``overrides``; SettingError naming the
    first known key whose value is not of its type (:func:`check_values`)."""
    conf = dict(DEFAULTS)
    if path is None and default_file:
        env = os.environ.get("STORMPY_CONF")
        if env:
            path = env
        elif Path("stormpy.yaml").is_file():
            path = "stormpy.yaml"
    if path is not None:
        conf.update(read_config_file(path))
    if overrides:
        conf.update(overrides)
    check_values(conf)
    return conf


#: parts of a key name whose value is never shown (``redacted``)
SECRET_KEY_PARTS = ("token", "password", "secret", "payload")


def redacted(conf: Mapping[str, Any]) -> dict[str, Any]:
    """``conf`` sorted by key for showing (the UI, ``get_nimbus_conf``): the value of a key whose
    name holds token, password, secret or payload becomes ``"*****"`` (None stays None)."""
    return {k: ("*****" if any(s in k for s in SECRET_KEY_PARTS) and v is not None else v)
            for k, v in sorted(conf.items())}


def rpc_auth_token(conf: Mapping[str, Any]) -> str | None:
    """``nimbus.rpc.auth.token`` as the string both sides compare, or None when auth is off.

    A value YAML read as a number (``-c nimbus.rpc.auth.token=1234``) counts as its text.
    """
    value = conf.get("nimbus.rpc.auth.token")
    if value is None or value == "":
        return None
    return str(value)


def local_dir(conf: Mapping[str, Any]) -> Path:
    """``storm.local.dir`` of ``conf``, its default when unset or empty (relative paths stay so)."""
    return Path(setting(conf, "storm.local.dir") or DEFAULTS["storm.local.dir"])


def log_dir(conf: Mapping[str, Any]) -> Path:
    """Where daemons log: ``storm.log.dir``, else ``<storm.local.dir>/logs``."""
    explicit = conf.get("storm.log.dir")
    return Path(explicit) if explicit else local_dir(conf) / "logs"


def message_timeout_secs(conf: Mapping[str, Any]) -> float:
    """``topology.message.timeout.secs`` of ``conf`` in seconds, its default when unset or None."""
    return float(setting(conf, "topology.message.timeout.secs"))


def merged(*layers: Mapping[str, Any] | None) -> dict[str, Any]:
    """Merge config layers left to right, starting from the defaults."""
    conf = dict(DEFAULTS)
    for layer in layers:
        if layer:
            conf.update(layer)
    return conf

publish(__name__, globals())
