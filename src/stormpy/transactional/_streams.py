"""Names of the streams and components a transactional topology adds (Storm's ids, spelled so they
cannot clash with user streams: user stream names may not start with ``$``)."""

#: coordinator → emitter tasks (all grouping): ``[attempt, metadata, last committed txid]``
BATCH_STREAM = "$batch"
#: coordinator → committers and committing emitters (all grouping): ``[attempt]``
COMMIT_STREAM = "$commit"
#: every coordinated task → each downstream task (direct): ``[attempt, tuples sent to it]``
COORD_STREAM = "$coord"
RESERVED_PREFIX = "$"
#: tick period of coordinated bolts, used to forget batches nobody finishes (their roots time out)
TICK_SECS = 5.0


def coordinator_id(spout_id: str) -> str:
    """The component id of the coordinator spout of ``spout_id``."""
    return f"{spout_id}-coordinator"
