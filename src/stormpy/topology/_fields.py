"""Field names of a stream and fast name → index lookup."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence


class Fields(Sequence[str]):
    """An ordered, immutable list of field names with O(1) name → position lookup."""

    __slots__ = ("_names", "_index")

    def __init__(self, names: Iterable[str] | str = ()) -> None:
        if isinstance(names, str):
            names = [names]
        self._names: tuple[str, ...] = tuple(names)
        for n in self._names:
            if not isinstance(n, str) or not n:
                raise ValueError(f"field names must be non-empty strings, got {n!r}")
        self._index = {n: i for i, n in enumerate(self._names)}
        if len(self._index) != len(self._names):
            raise ValueError(f"duplicate field name in {list(self._names)}")

    def index_of(self, name: str) -> int:
        """Position of ``name``; KeyError naming the field and the known fields otherwise."""
        try:
            return self._index[name]
        except KeyError:
            raise KeyError(f"unknown field {name!r}; fields are {list(self._names)}") from None

    def __contains__(self, name: object) -> bool:
        return name in self._index

    def __getitem__(self, i):
        return self._names[i]

    def __len__(self) -> int:
        return len(self._names)

    def __iter__(self) -> Iterator[str]:
        return iter(self._names)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Fields):
            return self._names == other._names
        if isinstance(other, list | tuple):
            return self._names == tuple(other)
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._names)

    def __repr__(self) -> str:
        return f"Fields({list(self._names)!r})"

    def to_list(self) -> list[str]:
        return list(self._names)
