"""Clocks of the executor loop: :class:`Clock` (real monotonic time) and :class:`SimulatedClock`
(moved by tests). They live in :mod:`stormpy.topology.clock`, where components find them too."""

from stormpy.topology.clock import Clock, SimulatedClock

__all__ = ["Clock", "SimulatedClock"]
