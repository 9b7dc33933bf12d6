"""The delivery-report half of :class:`~stormpy.connectors.kafka._bolt.KafkaBolt`.

Delivery reports are served by ``producer.poll`` run off the executor loop
(``run_in_background``), one poll job at a time while records are in flight or held; the reports
a job collected (appended by the client's delivery callbacks on the poll thread) are applied on
the loop when it finishes: one ``ack_many`` for the delivered tuples, fails, the rows of columnar
batches counted into their batches (each batch settled once: acked when nothing of it waits,
failed once at its first error), client errors reported; then the held records are produced again
in order while the client's queue takes them. Errors go to the task's ``report_error``
(:func:`stormpy.connectors._reporting.report_to_task`), which logs and throttles them once.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Callable
from typing import Any

from stormpy.connectors._reporting import report_to_task
from stormpy.connectors.kafka._bolt_batches import BatchDelivery
from stormpy.connectors.kafka._bolt_config import KafkaBoltConfig
from stormpy.topology import Bolt, TopologyContext, Tuple

__all__ = ["DELIVERY_POLL_SECS", "DeliveryReportingBolt"]

log = logging.getLogger("stormpy.connectors.kafka")

#: one background poll waits at most this long for delivery reports (it returns as soon as any)
DELIVERY_POLL_SECS = 0.1
#: the same kind of error is reported to topology info at most once per this many seconds


class DeliveryReportingBolt(Bolt):
    """A bolt producing through a confluent-kafka Producer: polls its delivery reports off the
    loop and applies them on it. The subclass's ``prepare`` sets the attributes below and
    implements :meth:`_produce` (one held record handed to the client again)."""

    cfg: KafkaBoltConfig
    context: TopologyContext
    producer: Any
    clock: Callable[[], float]
    #: filled by the delivery callbacks on the poll thread, drained on the loop
    _delivered: list[Tuple]
    _failed: list[tuple[Tuple, Any]]
    _delivered_rows: list[BatchDelivery]
    _failed_rows: list[tuple[BatchDelivery, Any]]
    _client_errors: deque[str]
    #: held for queue space: (the tuple, or the row's batch delivery), topic, key, value
    _backlog: deque[tuple[Tuple | BatchDelivery, str, bytes | None, bytes | None]]
    _polling: bool
    in_flight: int
    counters: dict[str, int]

    def _produce(self, item: Tuple | BatchDelivery, topic: str, key: bytes | None,
                 value: bytes | None) -> bool:
        """Hand one held record to the client; False when its local queue is still full."""
        raise NotImplementedError

    def _settle(self, delivery: BatchDelivery) -> None:
        """Ack the batch once nothing of it waits (or, with ``fire_and_forget``, once every row
        was handed to the client); fail it once at its first error."""
        if delivery.done:
            return
        if delivery.error is not None:
            delivery.done = True
            self.fail(delivery.batch)
        elif delivery.unproduced == 0 and (delivery.in_flight == 0 or self.cfg.fire_and_forget):
            delivery.done = True
            self.ack(delivery.batch)

    # -- delivery reports (polled off the loop) ---------------------------------------------
    def _ensure_polling(self) -> None:
        if not self._polling and (self.in_flight or self._backlog):
            self._polling = True
            self.run_in_background(self._poll, self._on_polled)

    def _poll(self) -> int:
        """Off the loop: serve delivery reports (and client errors) for up to DELIVERY_POLL_SECS."""
        return int(self.producer.poll(DELIVERY_POLL_SECS))

    def _on_polled(self, _served: Any, error: BaseException | None) -> None:
        self._polling = False
        if error is not None:
            self._report(f"polling delivery reports failed: {error!r}; retried")
        self._apply_reports()
        while self._backlog:
            tup, topic, key, value = self._backlog[0]
            if not self._produce(tup, topic, key, value):
                break
            self._backlog.popleft()
        self._ensure_polling()

    def _drain(self, reports: list[Any], counter: str) -> list[Any]:
        """The reports appended so far, removed from ``reports`` (the poll thread may append
        meanwhile: the first n only) and counted: ``in_flight`` down, ``counter`` up."""
        n = len(reports)
        taken = reports[:n]
        del reports[:n]
        self.in_flight -= n
        self.counters[counter] += n
        return taken

    def _apply_reports(self) -> None:
        """On the loop: ack the delivered tuples (one ``ack_many``), fail the failed ones, then
        the same for batch rows; report client errors."""
        fire_and_forget = self.cfg.fire_and_forget
        done = self._drain(self._delivered, "delivered")
        if done and not fire_and_forget:
            self.ack_many(done)
        lost = self._drain(self._failed, "delivery_failures")
        if lost:
            self._report(f"delivery failed: {lost[-1][1]}; tuple failed")
            if not fire_and_forget:
                for tup, _err in lost:
                    self.fail(tup)
        self._apply_row_reports()
        while self._client_errors:
            self._report(self._client_errors.popleft())

    def _apply_row_reports(self) -> None:
        """On the loop: count the reports of batch rows into their batches; settle those done."""
        last = None
        for delivery in self._drain(self._delivered_rows, "delivered"):
            delivery.in_flight -= 1  # a batch's rows arrive together: settle each batch once
            if delivery is not last and last is not None:
                self._settle(last)
            last = delivery
        if last is not None:
            self._settle(last)
        lost_rows = self._drain(self._failed_rows, "delivery_failures")
        if lost_rows:
            self._report(f"delivery failed: {lost_rows[-1][1]}; its batch failed")
        for delivery, err in lost_rows:
            delivery.in_flight -= 1
            if delivery.error is None:
                delivery.error = err
            self._settle(delivery)

    def _report(self, text: str) -> None:
        """Report an error to the task (logged and throttled there, once)."""
        report_to_task(self, "KafkaBolt", text)
