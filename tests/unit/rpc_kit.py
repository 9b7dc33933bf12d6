"""Shared by the RPC unit tests (tests/unit/rpc): how long a test waits for an answer."""

from __future__ import annotations

import os

#: Generous bound for an answer on a busy machine (a test waits this long only when it fails).
#: Mutation runs (tools/mutate.py sets STORMPY_TEST_WAIT_CAP) cap it like every wait of the testing
#: kit: a mutant that loses an answer then fails its test in seconds, not after the whole bound.
ANSWER_SECS = min(20.0, float(os.environ.get("STORMPY_TEST_WAIT_CAP") or 20.0))
