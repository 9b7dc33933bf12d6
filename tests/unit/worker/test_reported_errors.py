"""Reported errors (Storm's reportError): ``report_error`` and uncaught component errors are
visible in LocalCluster and topology info, throttled per task like Storm's executors."""

from __future__ import annotations

import pytest

from stormpy import Bolt, TopologyBuilder
from stormpy.cluster import ErrorInfo, StormBase
from stormpy.nimbus.info import topology_info
from stormpy.testing import FeederSpout, LocalCluster
from stormpy.topology._tuple import Tuple
from stormpy.worker.errors import WorkerError


class Complainer(Bolt):
    """Reports three errors per tuple (one an exception), acks; raises on "die"."""

    def execute(self, tup: Tuple) -> None:
        if tup.values[0] == "die":
            raise RuntimeError("died on purpose")
        self.report_error(ValueError(f"bad value {tup.values[0]}"))
        self.report_error("plain text")
        self.report_error("again")
        self.ack(tup)


def _topology(feeder: FeederSpout) -> TopologyBuilder:
    b = TopologyBuilder()
    b.set_spout("feed", feeder)
    b.set_bolt("complain", Complainer).shuffle_grouping("feed")
    return b


def test_reported_errors_are_listed_per_component_and_throttled_per_interval() -> None:
    feeder = FeederSpout(["word"])
    conf = {"topology.max.error.report.per.interval": 4, "topology.error.throttle.interval.secs": 10}
    with LocalCluster(simulated_time=True) as cluster:
        cluster.submit_topology("t", conf, _topology(feeder).create_topology())
        feeder.feed(["a"])
        feeder.feed(["b"])
        cluster.wait_for(lambda: len(feeder.acked) == 2, what="both acked")
        errors = cluster.errors("t", "complain")
        assert len(errors) == 4  # 6 reported in one interval, 4 kept
        assert errors[0]["error"].startswith("ValueError: bad value a")
        assert [e["error"] for e in errors[1:]] == ["plain text", "again", "ValueError: bad value b"]
        first = errors[0]
        assert first["component"] == "complain" and isinstance(first["task"], int)
        assert first["host"] and "port" in first and first["time"] > 0
        assert cluster.errors("t", "feed") == [] and cluster.errors("t") == errors
        assert cluster.worker("t").errors_suppressed == 2
        cluster.advance_time(11)  # a new interval
        feeder.feed(["c"])
        cluster.wait_for(lambda: len(feeder.acked) == 3, what="third acked")
        assert len(cluster.errors("t", "complain")) == 7


def test_an_uncaught_component_error_is_listed_even_when_throttled() -> None:
    feeder = FeederSpout(["word"])
    conf = {"topology.max.error.report.per.interval": 1}
    with LocalCluster(simulated_time=True) as cluster:
        cluster.submit_topology("t", conf, _topology(feeder).create_topology())
        feeder.feed(["a"])
        cluster.wait_for(lambda: len(feeder.acked) == 1, what="acked")
        feeder.feed(["die"])
        with pytest.raises(WorkerError, match="died on purpose"):
            cluster.wait_for(lambda: False, timeout=30, what="the failure")
        texts = [e["error"] for e in cluster.errors("t", "complain")]
        assert texts[0].startswith("ValueError: bad value a")
        assert "RuntimeError: died on purpose" in texts[-1] and "Traceback" in texts[-1]


def test_topology_info_shows_the_last_errors_per_component_with_time_host_and_port() -> None:
    base = StormBase("t-1", "t", "active", 1, 0.0, "me")
    errors = {"count": [ErrorInfo("count", 3, 100.0 + i, f"error {i}", "node-a", 6700)
                        for i in range(7)]}
    info = topology_info(base, None, None, {}, errors, now=200.0)
    shown = info["errors"]["count"]
    assert [e["message"] for e in shown] == [f"error {i}" for i in range(2, 7)]
    assert shown[-1] == {"time": 106.0, "task": 3, "host": "node-a", "port": 6700,
                         "message": "error 6"}
