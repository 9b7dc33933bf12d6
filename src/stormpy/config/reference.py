"""The configuration reference (docs/configuration.md), rendered from the key table.

Contract: :func:`render` returns the whole page from :data:`~stormpy.config.keys.CORE_KEYS`
(name, type as its check states it, default, meaning) and the prose below, so the page cannot
drift from the table; ``python -m stormpy.config.reference --write docs/configuration.md``
rewrites it and a unit test (tests/unit/test_config_reference.py) fails while it is stale.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from stormpy.config import COMPONENT_KEYS
from stormpy.config.keys import CORE_KEYS, ConfigKey

__all__ = ["render"]

INTRO = """\
# Configuration reference

<!-- Generated from src/stormpy/config/keys.py by
     `python -m stormpy.config.reference --write docs/configuration.md`; do not edit by hand. -->

stormpy uses Apache Storm's key names wherever it has the same concept. A topology's
configuration is layered: the defaults below, then the daemon's `stormpy.yaml`, then the
topology's own config (its module's `config` dict, `submit_topology(conf=...)`, `-c`), then a
component's own config for the keys Storm allows per component (marked *per component*).

## Types and the submit check

Every key below has a type. A topology's configuration is checked once, when it is submitted,
by one function (`stormpy.config.validate.check_topology_config`) that local mode
(`LocalCluster.submit_topology`, `stormpy local`), Nimbus (`submit_topology`) and the
submitting client (`stormpy jar`, before it uploads) all run. A value of the wrong type is one
`SettingError` whose message names the key (and the component, for a component's own value),
what was expected and the value given, e.g.

    topology.max.spout.pending: component 'reader': must be an integer >= 1, got 'many'

The CLI prints it as one `error:` line (exit code 2); Nimbus answers it as
`TopologyRefusedError`. Nothing is clamped or converted: a value that passes is used as written.
Every key also takes null (YAML `~` or an empty value, Python `None`): unset, so its default
applies (Storm's validators let null through too). Keys the table does not know pass unchecked
(topologies may carry settings of their own), but an unknown key under a core prefix
(`topology.`, `storm.`, `nimbus.`, ...) gives a warning naming the likely key
(`topology.max.spout.pendng` → `topology.max.spout.pending`).
Daemons check their `stormpy.yaml` and `-c` values with the same table when they load them.

Rules between keys, checked at submit with the cluster's values under the topology's:

* a windowed bolt needs `topology.message.timeout.secs` >= its window length plus sliding
  interval (plus lag and watermark interval in event time), unless message timeouts are off;
  a shorter timeout is refused (Storm's rule);
* a count window of N tuples (length plus sliding interval) holds N tuples un-acked, so a
  topology-wide `topology.max.spout.pending` below N is refused (Storm's windowed bolt refuses
  it too); a spout's own lower `topology.max.spout.pending` is a warning, since the check cannot
  know whether that spout feeds the window;
* a time window holds each tuple un-acked for up to its length plus sliding interval, so with
  `topology.max.spout.pending` set a window can see at most pending / seconds tuples per second
  per spout task. The spout's rate is not knowable at submit, so this is a warning stating the
  bound, never a refusal.

Warnings are logged, printed by `stormpy local` and `stormpy jar`, kept with the topology's
config (`topology.submit.warnings`) and shown by `stormpy info` and `get_topology_info`.

## `--config` and `-c`

Every command takes `--config` and `-c` (both repeatable; `stormpy local` spells `-c` also
`--config`), and each value is either the path of an existing YAML or JSON file or `KEY=VALUE`
(the value read as YAML: `5`, `true`, `[6700, 6701]`). Files apply first, in the order given,
then the `KEY=VALUE` pairs over them: a pair wins over a file. When no file is named, the
daemon and client commands read `$STORMPY_CONF`, else `./stormpy.yaml` if present. For
`stormpy jar`, the `KEY=VALUE` pairs and the `topology.*` (and connector) keys of the files
become the topology's config; `nimbus.rpc.auth.token` only authenticates the command.

## Reading a key in code

`stormpy.config.setting(conf, key)` returns the key's value, or this table's default when the
conf lacks it or holds null; it is the one way to read a known key with its default (a unit
test refuses `conf.get(key) or 5`). Runtime code reads its keys once, at setup.
"""

SECTIONS = (
    ("Topology", ("topology.",)),
    ("Nimbus", ("nimbus.", "dev.")),
    ("Supervisor and worker", ("supervisor.", "worker.")),
    ("UI", ("ui.",)),
    ("ZooKeeper, storage and security", ("storm.",)),
)


def _default(value: Any) -> str:
    if value is None:
        return "*unset*"
    return f"`{json.dumps(value)}`"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _row(key: ConfigKey) -> str:
    expected = key.check.expected if key.check is not None else "any"
    per_component = " *Per component.*" if key.name in COMPONENT_KEYS else ""
    return (f"| `{key.name}` | {_cell(expected)} | {_default(key.default)} | "
            f"{_cell(key.doc)}{per_component} |")


def render() -> str:
    """The whole reference page (Markdown)."""
    lines = [INTRO]
    placed: set[str] = set()
    for title, prefixes in SECTIONS:
        keys = [k for k in CORE_KEYS if k.name.startswith(prefixes) and k.name not in placed]
        placed.update(k.name for k in keys)
        lines += [f"## {title} keys", "", "| key | type | default | meaning |", "|---|---|---|---|"]
        lines += [_row(k) for k in keys]
        lines.append("")
    left = [k for k in CORE_KEYS if k.name not in placed]
    if left:
        lines += ["## Other keys", "", "| key | type | default | meaning |", "|---|---|---|---|"]
        lines += [_row(k) for k in left]
        lines.append("")
    lines += ["Connectors (Kafka, Kinesis, Spark, transactional topologies) register their own "
              "keys and check them with their settings classes; see their pages.", ""]
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    """``--write PATH`` writes the page there; without arguments it goes to stdout."""
    if argv[:1] == ["--write"] and len(argv) == 2:
        Path(argv[1]).write_text(render())
        return 0
    if argv:
        print("usage: python -m stormpy.config.reference [--write PATH]", file=sys.stderr)
        return 2
    sys.stdout.write(render())
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
