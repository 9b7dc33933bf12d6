"""The even scheduler: a pure function from executors and free slots to an assignment.

Like Storm's EvenScheduler, for one topology:

1. Keep every existing worker slot that is still available and whose executors still exist in the
   current layout (alive executors stay where they run: no needless worker restarts). When more
   slots are kept than ``num_workers`` allows (the worker count went down), the fullest are kept.
   When fewer slots are kept than the target and free slots exist (slots came back after executors
   were packed onto the survivors), the topology spreads back like Storm's "bad slots" rule: with
   ``E`` executors over ``T`` target slots each slot should run ``E // T`` or ``E // T + 1``
   executors; a kept slot whose count fits that distribution stays untouched, any other kept slot
   is released and its executors are dealt anew. Workers that fit are never restarted.
2. Use ``min(num_workers, available slots)`` slots in total. New slots are taken from the free ones
   interleaved across supervisors — nodes that host fewer of this topology's kept slots first, then
   nodes with more free slots, then by id; ``node0:p0, node1:p0, node0:p1, ...`` — so workers
   spread over supervisors. Slots listed in ``avoid`` (where a worker just died) come last.
3. Executors without a slot are dealt round-robin, in sorted order, over the new slots (or over the
   kept slots when no new slot is free). Sorted order keeps a component's executors contiguous, so
   round-robin spreads each component across workers.

Executors are ``(start_task, end_task)`` pairs (acker executors included: the caller passes the
whole layout), slots are ``(node, port)``. Nothing here touches ZooKeeper or the clock.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence

from stormpy.topology._layout import ExecutorKey

__all__ = ["ExecutorKey", "Slot", "available_slots", "schedule_topology", "sort_slots"]

Slot = tuple[str, int]


def available_slots(supervisor_ports: Mapping[str, Iterable[int]],
                    other_assignments: Iterable[Mapping[ExecutorKey, Slot]]) -> dict[str, list[int]]:
    """node → sorted ports of live supervisors that no *other* topology's assignment uses."""
    used: set[Slot] = set()
    for assignment in other_assignments:
        used.update((node, int(port)) for node, port in assignment.values())
    return {node: sorted(p for p in {int(x) for x in ports} if (node, p) not in used)
            for node, ports in sorted(supervisor_ports.items())}


def sort_slots(slots: Mapping[str, Iterable[int]], *, kept_per_node: Mapping[str, int] | None = None,
               avoid: Collection[Slot] = ()) -> list[Slot]:
    """Interleave ``slots`` across nodes (see the module docstring for the order)."""
    kept = kept_per_node or {}
    by_node = {node: sorted({int(p) for p in ports if (node, int(p)) not in avoid})
               for node, ports in slots.items()}
    nodes = sorted(by_node, key=lambda n: (kept.get(n, 0), -len(by_node[n]), n))
    out: list[Slot] = []
    depth = max((len(p) for p in by_node.values()), default=0)
    for i in range(depth):
        for node in nodes:
            if i < len(by_node[node]):
                out.append((node, by_node[node][i]))
    avoided = sorted(s for s in avoid if s[0] in slots and s[1] in {int(p) for p in slots[s[0]]})
    return out + avoided


def schedule_topology(executors: Iterable[ExecutorKey], available: Mapping[str, Sequence[int]],
                      num_workers: int, existing: Mapping[ExecutorKey, Slot] | None = None, *,
                      avoid: Collection[Slot] = ()) -> dict[ExecutorKey, Slot]:
    """The topology's new assignment ``executor → slot`` (empty when no slot is available).

    ``available``: node → ports this topology may use (free ones plus those it already uses).
    ``existing``: where the topology's *alive* executors run now (dead ones left out).
    ``num_workers``: the requested worker count (at least 1).
    """
    all_execs = sorted({(int(s), int(e)) for s, e in executors})
    avail = {(node, int(p)) for node, ports in available.items() for p in ports}
    target = min(max(1, int(num_workers)), len(avail))
    if target == 0 or not all_execs:
        return {}
    exec_set = set(all_execs)
    kept: dict[Slot, list[ExecutorKey]] = {}
    for executor, slot in sorted((existing or {}).items()):
        slot = (slot[0], int(slot[1]))
        if executor in exec_set and slot in avail:
            kept.setdefault(slot, []).append(executor)
    if len(kept) > target:
        fullest = sorted(kept, key=lambda s: (-len(kept[s]), s))[:target]
        kept = {s: kept[s] for s in sorted(fullest)}
    elif len(kept) < target and len(avail) > len(kept):
        kept = _fitting_slots(kept, len(all_execs), target)
    assignment: dict[ExecutorKey, Slot] = {e: s for s, execs in kept.items() for e in execs}
    kept_per_node: dict[str, int] = {}
    for node, _ in kept:
        kept_per_node[node] = kept_per_node.get(node, 0) + 1
    free = {node: [p for p in ports if (node, int(p)) not in kept] for node, ports in available.items()}
    new_slots = sort_slots(free, kept_per_node=kept_per_node, avoid=avoid)[:target - len(kept)]
    unassigned = [e for e in all_execs if e not in assignment]
    destinations = new_slots or sorted(kept)
    for i, executor in enumerate(unassigned):
        assignment[executor] = destinations[i % len(destinations)]
    return assignment


def _fitting_slots(kept: Mapping[Slot, list[ExecutorKey]], n_execs: int,
                   target: int) -> dict[Slot, list[ExecutorKey]]:
    """The kept slots whose executor counts fit an even spread of ``n_execs`` over ``target`` slots
    (``q`` or ``q + 1`` each, at most ``r`` of the larger); slots that hold most fitting ones win."""
    q, r = divmod(n_execs, target)
    big_left, small_left = r, target - r
    out: dict[Slot, list[ExecutorKey]] = {}
    for slot in sorted(kept, key=lambda s: (-len(kept[s]), s)):
        count = len(kept[slot])
        if count == q + 1 and big_left > 0:
            big_left -= 1
        elif count == q and q > 0 and small_left > 0:
            small_left -= 1
        else:
            continue
        out[slot] = kept[slot]
    return dict(sorted(out.items()))
