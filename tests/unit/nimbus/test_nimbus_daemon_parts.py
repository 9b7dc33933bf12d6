"""The Nimbus daemon's parts that need no ZooKeeper: the id a Nimbus keeps across restarts, the
summary it gives before it serves, the address it binds, and stopping one that never started."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from stormpy import __version__
from stormpy.nimbus.daemon import Nimbus, bind_address
from stormpy.nimbus.localdirs import NimbusDirs


def test_a_nimbus_keeps_its_id_across_restarts(tmp_path: Path) -> None:
    conf = {"storm.local.dir": str(tmp_path)}
    first = Nimbus(conf)._load_nimbus_id()
    assert re.fullmatch(r"nimbus-[0-9a-f]{12}", first)
    id_file = NimbusDirs(tmp_path).id_file
    assert id_file.read_text() == first + "\n"
    assert Nimbus(conf)._load_nimbus_id() == first
    id_file.write_text("  \n")  # an emptied id file: a new id, written down again
    second = Nimbus(conf)._load_nimbus_id()
    assert second != first and id_file.read_text() == second + "\n"


def test_the_summary_of_a_nimbus_that_does_not_serve_yet(tmp_path: Path) -> None:
    now = [500.0]
    nimbus = Nimbus({"storm.local.dir": str(tmp_path), "nimbus.host": "10.0.0.7", "nimbus.thrift.port": 7001},
                    clock=lambda: now[0])
    nimbus.started_at = 487.66
    assert nimbus.info() == {"id": "", "host": "10.0.0.7", "port": 7001, "version": __version__,
                             "leader": False, "start_time": 487.66, "uptime_secs": 12.3}
    assert nimbus.leader_address() is None and not nimbus.is_leader()
    with pytest.raises(RuntimeError, match="^Nimbus is not running$"):
        _ = nimbus.port


@pytest.mark.parametrize(("host", "bound"), [("*", "*"), ("", "0.0.0.0"), ("10.1.2.3", "10.1.2.3"),
                                             ("::1", "::1"), ("localhost", "127.0.0.1")])
def test_the_address_a_nimbus_binds(host: str, bound: str) -> None:
    assert bind_address(host) == bound


def test_stopping_a_nimbus_that_never_started_is_harmless_and_idempotent(tmp_path: Path) -> None:
    nimbus = Nimbus({"storm.local.dir": str(tmp_path)})
    nimbus.stop()
    nimbus.stop()
    assert nimbus.stop_requested
    assert (nimbus.server, nimbus.state, nimbus.leadership, nimbus.replicator) == (None, None, None, None)
