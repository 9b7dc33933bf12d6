"""Errors raised while describing or validating a topology."""

from __future__ import annotations


class InvalidTopologyError(ValueError):
    """The topology cannot run; the message names the component, stream or field at fault."""


class FailedException(Exception):
    """Raised inside ``BasicBolt.process`` to fail the input tuple (it is replayed by a reliable
    spout) instead of acking it."""


class EmitError(ValueError):
    """An emit that cannot be delivered: unknown or direct stream, wrong number of values,
    a value msgpack cannot carry. The message names the component and the stream."""
