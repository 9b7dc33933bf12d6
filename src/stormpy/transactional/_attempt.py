"""TransactionAttempt: which batch a tuple belongs to, and which try of it."""

from __future__ import annotations

from typing import Any


class TransactionAttempt:
    """A batch's transaction id (the same on every replay) and attempt id (new on every replay).

    Every tuple of a transactional topology carries its attempt as its first value. On the wire it
    travels as the plain list ``[transaction_id, attempt_id]`` (msgpack carries no objects); the
    runtime turns it back into a ``TransactionAttempt`` before a batch bolt sees the tuple.
    """

    __slots__ = ("transaction_id", "attempt_id", "wire")

    def __init__(self, transaction_id: int, attempt_id: int) -> None:
        self.transaction_id = int(transaction_id)
        self.attempt_id = int(attempt_id)
        #: the wire form, shared by every tuple of the attempt (read-only)
        self.wire = [self.transaction_id, self.attempt_id]

    @classmethod
    def of(cls, value: Any) -> TransactionAttempt:
        """``value`` as an attempt: an attempt itself or its wire form ``[txid, attempt_id]``;
        ValueError naming the value otherwise."""
        if isinstance(value, TransactionAttempt):
            return value
        if isinstance(value, (list, tuple)) and len(value) == 2 and \
                all(isinstance(v, int) and not isinstance(v, bool) for v in value):
            return cls(value[0], value[1])
        raise ValueError(f"{value!r:.80} is not a transaction attempt: the first value of every "
                         "tuple in a transactional topology must be the batch's TransactionAttempt")

    def to_wire(self) -> list[int]:
        """A fresh ``[transaction_id, attempt_id]``."""
        return [self.transaction_id, self.attempt_id]

    @property
    def key(self) -> tuple[int, int]:
        return (self.transaction_id, self.attempt_id)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TransactionAttempt) and self.key == other.key

    def __hash__(self) -> int:
        return hash(self.key)

    def __repr__(self) -> str:
        return f"TransactionAttempt({self.transaction_id}, {self.attempt_id})"
