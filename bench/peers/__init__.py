"""Other stream processors as the bench's peers, run in the same bench invocation as stormpy:
Apache Storm itself (``bench/peers/storm/``, a Maven project, driven by ``storm_peer.py``;
``storm_shell.py`` runs one multilang shell component on it and on stormpy and compares what
each emitted).
``python -m bench.peers`` (``make bench-peers``) prints them beside stormpy and Bytewax."""
