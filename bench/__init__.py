"""Benchmark harness: the same word count through a plain loop, stormpy and peers."""
