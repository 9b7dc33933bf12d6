"""Which Kafka broker to run for development and benchmarks, and ``stormpy dev-kafka``'s loop.

Apache Kafka (:class:`stormpy.local._apache_kafka.ApacheKafkaBroker`) when Java and its jars are
there (``make kafka``), else tansu (:class:`stormpy.local._kafka_broker.TansuBroker`), always saying
which and, for tansu, why Apache Kafka was not taken. ``choice`` forces one: ``"kafka"`` or
``"tansu"`` (``"auto"`` is the rule above).

Starting a broker takes a while (Apache Kafka: tens of seconds on a busy machine), so
:func:`starting` says what is being started before it starts, how long it has been waiting every
:data:`PROGRESS_SECS` and how long it took once it serves: a developer never faces a silent
terminal.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from typing import Any

from stormpy.host.daemon import child_exit_watch, serve_until_stopped
from stormpy.local._apache_kafka import ApacheKafkaBroker, apache_kafka_missing
from stormpy.local._kafka_broker import KafkaBroker, KafkaBrokerNotFound, TansuBroker

__all__ = ["BROKER_CHOICES", "PROGRESS_SECS", "choose_broker", "run_dev_kafka", "start_broker",
           "starting"]

BROKER_CHOICES = ("auto", "kafka", "tansu")
#: how often :func:`starting` says the broker is still starting
PROGRESS_SECS = 5.0


def starting(broker: KafkaBroker, address: str, echo: Callable[[str], Any]) -> float:
    """Start ``broker`` (to serve on ``address``), echoing a line before, one every
    :data:`PROGRESS_SECS` while it starts; returns the seconds it took. Its errors propagate."""
    began = time.monotonic()
    echo(f"starting {broker.kind} on {address}; waiting until it serves...")
    done = threading.Event()

    def report() -> None:
        while not done.wait(PROGRESS_SECS):
            echo(f"still starting {broker.kind}: {time.monotonic() - began:.0f} s so far")
    reporter = threading.Thread(target=report, name="dev-kafka-progress", daemon=True)
    reporter.start()
    try:
        broker.start()
    finally:
        done.set()
        reporter.join()
    return time.monotonic() - began


def choose_broker(port: int = 0, *, host: str = "127.0.0.1",
                  log_dir: str | os.PathLike[str] | None = None,
                  choice: str = "auto") -> tuple[KafkaBroker, str | None]:
    """A broker (not started) by the module's rule, and why Apache Kafka was not chosen (None when
    it was). Raises KafkaBrokerNotFound when ``choice="kafka"`` and Apache Kafka cannot run, and
    ValueError for an unknown ``choice``."""
    if choice not in BROKER_CHOICES:
        raise ValueError(f"broker choice must be one of {', '.join(BROKER_CHOICES)}, got {choice!r}")
    if choice == "tansu":
        return TansuBroker(port, host=host, log_dir=log_dir), "tansu was asked for"
    missing = apache_kafka_missing()
    if missing is None:
        return ApacheKafkaBroker(port, host=host, log_dir=log_dir), None
    if choice == "kafka":
        raise KafkaBrokerNotFound(missing)
    return TansuBroker(port, host=host, log_dir=log_dir), missing


def start_broker(choice: str = "auto", *, port: int = 0, host: str = "127.0.0.1",
                 log_dir: str | os.PathLike[str] | None = None,
                 echo: Callable[[str], Any] = print) -> KafkaBroker:
    """Start the broker :func:`choose_broker` picks and return it once it serves, having echoed
    which broker it is (and, for tansu, why not Apache Kafka). The caller stops it."""
    broker, why_not_kafka = choose_broker(port, host=host, log_dir=log_dir, choice=choice)
    if why_not_kafka is not None:
        echo(f"starting tansu instead of Apache Kafka: {why_not_kafka}")
    took = starting(broker, f"{host}:{port or 'a free port'}", echo)
    echo(f"Kafka broker {broker.flavour} serving on {broker.bootstrap_servers} (ready after "
         f"{took:.0f} s; log {broker.log_path})")
    return broker


def run_dev_kafka(port: int = 9092, log_dir: str | os.PathLike[str] = "stormpy-local/dev-kafka", *,
                  host: str = "127.0.0.1", choice: str = "auto", echo: Callable[[str], Any] = print,
                  stop_event: Any = None, on_ready: Callable[[KafkaBroker], Any] | None = None) -> int:
    """Run the broker :func:`choose_broker` picks on ``host:port`` until SIGINT/SIGTERM (handlers
    installed only on the main thread) or ``stop_event`` is set, then return 0; if the broker dies
    on its own, print its log tail and return its status (1 when unknown). Raises
    KafkaBrokerNotFound / KafkaBrokerStartError when it cannot start. Apache Kafka keeps its data in
    ``log_dir`` across restarts; tansu keeps it in memory (a restart starts empty)."""
    broker, why_not_kafka = choose_broker(port, host=host, log_dir=log_dir, choice=choice)

    def start() -> None:
        if why_not_kafka is not None:
            echo(f"starting tansu instead of Apache Kafka: {why_not_kafka}")
        took = starting(broker, f"{host}:{port}", echo)
        kept = ("data kept across restarts" if isinstance(broker, ApacheKafkaBroker)
                else "data in memory only")
        echo(f"Kafka broker {broker.flavour} serving on {broker.bootstrap_servers} "
             f"(ready after {took:.0f} s; log {broker.log_path}; {kept}); Ctrl-C to stop")
        if on_ready is not None:
            on_ready(broker)

    exited = child_exit_watch(broker, "the Kafka broker", echo)
    return serve_until_stopped(start, broker.stop, exited, stopping="stopping the Kafka broker",
                               echo=echo, stop_event=stop_event)
