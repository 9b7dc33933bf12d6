"""One worker: the executor loop running its task runners, with their routing, delivery, acking
and timers, the transfer to other workers, and the worker process of a cluster. Local mode
(``stormpy.local``) runs a ``Worker`` holding every task."""

from stormpy.worker.errors import WorkerError
from stormpy.worker.factory import WorkerConfig
from stormpy.worker.loop import Worker

__all__ = ["Worker", "WorkerConfig", "WorkerError"]
