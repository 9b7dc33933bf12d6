"""Web access-log analytics, the pieces of the flagship example (``examples/flagship.py``).

* ``generator`` — a seeded generator of Apache combined-format access logs (with a few
  malformed lines, as real logs have);
* ``parsing`` — the combined-format parser;
* ``spout`` — a reliable file spout (message id = byte offset of the line; failed lines replay);
* ``bolts`` — the parser bolt, the Spark aggregation bolt writing Parquet, the reporting bolt;
* ``report`` — reading the Parquet output back with Spark into a printed summary.
"""
