"""A Nimbus binding every interface names a host clients can reach, never 0.0.0.0."""

from __future__ import annotations

import socket

import pytest

from stormpy.nimbus.daemon import Nimbus, advertised_host


@pytest.mark.parametrize("bind_all", ["0.0.0.0", "*", ""])
def test_binding_every_interface_names_this_machine(bind_all: str) -> None:
    assert advertised_host({"nimbus.host": bind_all}) == socket.gethostname()


def test_storm_local_hostname_names_it_when_set() -> None:
    conf = {"nimbus.host": "0.0.0.0", "storm.local.hostname": "nimbus-a.example"}
    assert advertised_host(conf) == "nimbus-a.example"
    assert Nimbus(conf).advertised_host == "nimbus-a.example"


def test_a_named_host_is_given_as_it_is() -> None:
    conf = {"nimbus.host": "10.0.0.7", "storm.local.hostname": "ignored.example"}
    assert advertised_host(conf) == "10.0.0.7"
    assert advertised_host({"nimbus.host": "nimbus"}) == "nimbus"
