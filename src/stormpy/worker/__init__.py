"""One worker: task runners, routing, the executor loop and local mode."""

from stormpy.worker.clock import Clock, SimulatedClock
from stormpy.worker.errors import WorkerError
from stormpy.worker.factory import WorkerConfig
from stormpy.worker.loop import Worker

__all__ = ["Clock", "SimulatedClock", "Worker", "WorkerConfig", "WorkerError"]
