"""Partition assignment, first-poll offsets and commit metadata of the Kafka spout (pure rules).

* :func:`topic_partitions` — the partitions the subscription covers, from broker metadata
  (``{topic: partition count}``): the named topics, or every non-internal topic whose whole name
  matches the pattern. :func:`missing_topics` lists named topics the broker does not know.
* :func:`assign_round_robin` — Storm 2.x's manual assignment: all partitions sorted by topic and
  partition, the i-th going to the spout task of index ``i mod tasks`` (the connectors' shared
  :func:`~stormpy.connectors._partitions.round_robin_share`, as the Kinesis spout's shards).
* :func:`commit_metadata` / :func:`committed_by_topology` — the JSON stored with every commit
  (``topologyId``, ``taskId``, ``threadName``, storm-kafka-client's format) and the test whether a
  commit was made by this topology.
* :func:`start_offset` — where a newly assigned partition starts (storm-kafka-client's rule):
  a commit by this topology is always resumed; otherwise ``EARLIEST``/``LATEST`` seek to the
  beginning/end and the ``UNCOMMITTED_*`` strategies resume at the committed offset; with no commit
  at all, ``*EARLIEST`` starts at the beginning and ``*LATEST`` at the end.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterable, Mapping

from stormpy.connectors._partitions import round_robin_share
from stormpy.connectors.kafka._config import FirstPollOffsetStrategy
from stormpy.connectors.kafka._messages import OffsetAndMetadata, TopicPartition

__all__ = ["OFFSET_BEGINNING", "OFFSET_END", "assign_round_robin", "commit_metadata",
           "committed_by_topology", "missing_topics", "start_offset", "topic_partitions"]

#: librdkafka's logical offsets (the same values as confluent_kafka.OFFSET_BEGINNING/OFFSET_END)
OFFSET_BEGINNING = -2
OFFSET_END = -1


def topic_partitions(metadata: Mapping[str, int], topics: Iterable[str] | None,
                     pattern: str | None) -> list[TopicPartition]:
    """Sorted partitions of the subscribed topics present in ``metadata``."""
    if topics is not None:
        names = [t for t in dict.fromkeys(topics) if t in metadata]
    else:
        regex = re.compile(pattern or "")
        names = [t for t in metadata if not t.startswith("__") and regex.fullmatch(t)]
    return sorted(TopicPartition(t, p) for t in names for p in range(metadata[t]))


def missing_topics(metadata: Mapping[str, int], topics: Iterable[str] | None) -> list[str]:
    """Named topics the broker does not know (or that have no partitions)."""
    return [t for t in (topics or ()) if not metadata.get(t)]


def assign_round_robin(partitions: Iterable[TopicPartition], task_index: int,
                       num_tasks: int) -> list[TopicPartition]:
    """The partitions of the task of index ``task_index`` among ``num_tasks`` tasks (ValueError
    when the index is out of range)."""
    return round_robin_share(partitions, task_index, num_tasks)


def commit_metadata(topology_id: str, task_id: int, thread_name: str | None = None) -> str:
    """The metadata string stored with this task's commits."""
    return json.dumps({"topologyId": topology_id, "taskId": task_id,
                       "threadName": thread_name or threading.current_thread().name},
                      separators=(",", ":"))


def committed_by_topology(metadata: str | None, topology_id: str) -> bool:
    """True when ``metadata`` (of a committed offset) names ``topology_id``. Metadata that is not
    ours (another client, an older spout, a broker that drops it) counts as not ours."""
    if not metadata:
        return False
    try:
        doc = json.loads(metadata)
    except ValueError:
        return False
    return isinstance(doc, dict) and doc.get("topologyId") == topology_id


def start_offset(strategy: FirstPollOffsetStrategy, committed: OffsetAndMetadata | None,
                 by_this_topology: bool) -> int:
    """The offset a new partition starts at: a real offset, OFFSET_BEGINNING or OFFSET_END.

    ``committed`` is the group's committed offset (None or negative when there is none);
    ``by_this_topology`` whether this topology made that commit."""
    if committed is not None and committed.offset >= 0:
        if by_this_topology:
            return committed.offset
        if strategy is FirstPollOffsetStrategy.EARLIEST:
            return OFFSET_BEGINNING
        if strategy is FirstPollOffsetStrategy.LATEST:
            return OFFSET_END
        return committed.offset
    if strategy in (FirstPollOffsetStrategy.EARLIEST, FirstPollOffsetStrategy.UNCOMMITTED_EARLIEST):
        return OFFSET_BEGINNING
    return OFFSET_END
