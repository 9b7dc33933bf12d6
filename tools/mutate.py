"""Mutation testing of the core modules with mutmut (``make mutate``; see docs/testing.md).

Each *target* below names the source files to mutate (glob patterns, so a file split or renamed
inside a target's directory stays covered) and the fast tests that may cover them. A target runs
in its own work directory, ``.mutmut/<target>/``, whose ``pyproject.toml`` is the project's plus a
``[tool.mutmut]`` section written here; mutmut copies the sources into ``mutants/`` there,
collects once which tests reach which function, then runs, for each mutant, only the tests that
reach its function. Results are cached per function (an unchanged function is not re-run), so a
second run only tests what changed.

The pure-Python tuple path is used (``STORMPY_PURE=1``): the compiled extensions would be
imported instead of the mutated sources.

Usage::

    python tools/mutate.py run [TARGET ...]      # all targets when none is named
    python tools/mutate.py run TARGET --mutants 'stormpy.trident._state.*'
                                                 # only the mutants matching the patterns (a file, a
                                                 # function: fnmatch over mutmut's names), run again
                                                 # even when they have a result
    python tools/mutate.py summary [TARGET ...]  # scores from the last runs
    python tools/mutate.py survivors TARGET      # surviving mutants, with their diffs
    python tools/mutate.py recheck TARGET        # re-run only those (after adding tests)
    python tools/mutate.py kills TARGET          # which test killed each mutant (false kills)
    python tools/mutate.py clean [TARGET ...]    # forget cached results
    python tools/mutate.py uncovered             # the source files no target mutates, by package

Adding a module is one line in ``TARGETS``.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
WORK = ROOT / ".mutmut"
#: the fast tests: unit tests only (no ZooKeeper, no real cluster processes, no JVM)
FAST = ("tests/unit",)
#: the tests of `test_cli_config.py` that run `python -m stormpy.cli` in a child process (it imports
#: the package outside mutmut's process)
CLI_SUBPROCESS_TESTS = tuple(
    f"--deselect=tests/unit/cli/test_cli_config.py::{test}"
    for test in ("test_the_error_that_stops_a_local_run_is_printed_once_with_its_traceback",
                 "test_the_stormpy_command_prints_a_warning_once_not_also_as_a_log_record"))
#: tests left out everywhere: they start fresh interpreters (the compiled-extension checks, the
#: CLI, the bench, hashing in other processes), which import the installed package, not the
#: mutants; and this tool's own tests, which judge the repository's layout (in mutmut's copy its
#: pyproject.toml holds the target's ``[tool.mutmut]``, which the tool refuses)
ALWAYS_IGNORE = ("--ignore=tests/unit/topology/test_native.py", "--ignore=tests/unit/cli/test_cli_local.py",
                 "--ignore=tests/unit/project/test_bench_smoke.py",
                 "--ignore=tests/unit/project/test_mutate_tool.py",
                 "--deselect=tests/unit/worker/test_groupings.py::test_fields_hash_is_the_same_in_every_process",
                 *CLI_SUBPROCESS_TESTS)
#: source lines never mutated: log calls (their wording is not behaviour; the whole call, however
#: many lines it spans, is left alone)
NO_MUTATE_LINES = (r"^\s*(log|logger)\.(debug|info|warning|error|exception)\(",)
#: log calls through an instance's logger (``self.log.warning(...)``), left alone in the targets
#: whose classes log that way (added per target: a new pattern renumbers a file's mutants)
SELF_LOG_LINES = r"^\s*self\.log\.(debug|info|warning|error|exception)\("
#: source files never worth mutating in any target: package ``__init__`` files, and the two
#: ``__main__`` modules (an import and a call of ``stormpy.cli.main.main``, run only as
#: ``python -m``, which imports the installed package, not a mutant; the subprocess tests of
#: ``python -m stormpy`` and ``python -m stormpy.cli`` in tests/unit/cli and tests/integration
#: judge them)
ALWAYS_SKIP = ("*/__init__.py", "*/__main__.py")


@dataclass(frozen=True)
class Target:
    """Files to mutate (``fnmatch`` patterns over paths like ``src/stormpy/acker/core.py``, where
    ``*`` also matches ``/``), patterns to leave out, and the tests mutmut may pick from (glob
    patterns of test files or directories, relative to the repository root)."""

    mutate: tuple[str, ...]
    skip: tuple[str, ...] = ()
    tests: tuple[str, ...] = FAST
    #: pytest arguments, e.g. ``("--deselect", "tests/unit/**/test_x.py::test_slow")``
    pytest_args: tuple[str, ...] = ()
    #: ``fork`` (fastest) or ``forkserver`` (for tests whose setup is not fork-safe)
    isolation: str = "fork"
    extra: dict[str, object] = field(default_factory=dict)


#: the worker targets leave out the inbound frame fuzz (a Hypothesis test that reaches the loop's
#: hot functions and took most of the survivors' test time): `test_worker_inbound_table.py`'s
#: example tests kill every inbound mutant without it (docs/testing.md); it stays in `make test`
WORKER_PYTEST_ARGS = ("--deselect",
                      "tests/unit/worker/test_worker_inbound.py::test_no_frame_crashes_the_worker")
#: worker files that are features beside the executor loop, tasks and routing (not in the core set)
WORKER_FEATURES = ("src/stormpy/worker/hooks.py", "src/stormpy/worker/metrics_consumers.py")

#: The core set, then the modules added as they land (a new one is one entry here). The connector
#: and feature targets name the unit tests that cover them: collecting which test reaches which
#: function then costs seconds instead of a whole ``tests/unit`` run.
TARGETS: dict[str, Target] = {
    "acker": Target(("src/stormpy/acker/*.py",)),
    # the executor loop, tasks and routing (and whatever the loop is split into); the process
    # shell around them (process, ZooKeeper link, heartbeats, peers, error reporter) is the
    # worker-shell target below
    # (task hooks and metrics consumers are features beside the loop, in their own target below)
    "worker": Target(("src/stormpy/worker/*.py",),
                     skip=("*/worker/process.py", "*/worker/cluster_link.py", "*/worker/heartbeats.py",
                           "*/worker/peers.py", "*/worker/error_reporter.py", *WORKER_FEATURES),
                     pytest_args=WORKER_PYTEST_ARGS),
    # Storm's task hooks and metrics consumers, with the unit tests that cover them
    "worker-features": Target(WORKER_FEATURES,
                              tests=("tests/unit/**/test_task_hook*.py",
                                     "tests/unit/topology/test_spout_batches.py",
                                     "tests/unit/topology/test_task_construction.py",
                                     "tests/unit/topology/test_metrics_consumer.py",
                                     "tests/unit/worker/test_metrics_feed_parts.py",
                                     "tests/unit/worker/test_stat_documents.py")),
    # the worker one file at a time (each is a fraction of the worker's run, so a file's tests can
    # be worked through without re-running the whole worker; same mutants, same tests)
    **{f"worker-{part}": Target((f"src/stormpy/worker/{part}.py",), pytest_args=WORKER_PYTEST_ARGS)
       for part in ("routing", "dispatch", "transfer", "task_timers", "tasks", "bolt_task",
                    "spout_task", "spout_roots", "emit_checks", "sampling", "loop", "stats",
                    "values", "offloop", "factory", "column_path", "column_emit", "column_anchors",
                    "inbound", "spout_batch", "edges", "worker_stats", "task_errors")},
    # the event logger (sampled tuples to the events log, its rotation), with its unit tests
    "worker-event-logger": Target(("src/stormpy/worker/event_logger.py",),
                                  tests=("tests/unit/worker/test_event_logger*.py",)),
    # a tracked run's edge ids on the wire: the generator states (edges.py), the run encoding
    # that sends them (transfer.py) and the decoding that draws them again (inbound.py), with
    # the unit tests that cover them, Transfer's own (outboxes, refused frames, backpressure)
    # and Inbound's (a run over the whole of tests/unit collects for minutes)
    "worker-wire-edges": Target(tuple(f"src/stormpy/worker/{part}.py"
                                      for part in ("edges", "transfer", "inbound")),
                                tests=("tests/unit/worker/test_edge_*.py",
                                       "tests/unit/worker/test_run_edge_states.py",
                                       "tests/unit/worker/test_batching_edges.py",
                                       "tests/unit/worker/test_worker_inbound*.py",
                                       "tests/unit/worker/test_inbound_*.py",
                                       "tests/unit/worker/test_column_wire.py",
                                       "tests/unit/topology/test_transfer_*.py",
                                       "tests/unit/messaging/test_wire_runs.py",
                                       "tests/unit/messaging/test_remote_routing.py"),
                                pytest_args=WORKER_PYTEST_ARGS),
    # worker heartbeats to Nimbus: the worker's channel to its supervisor, the supervisor's
    # relay to the leading Nimbus, and Nimbus's store of the beats
    "heartbeats": Target(("src/stormpy/worker/heartbeat_channel.py",
                          "src/stormpy/supervisor/heartbeat_relay.py",
                          "src/stormpy/nimbus/worker_beats.py"),
                         tests=("tests/unit/supervisor/test_heartbeat_*.py",
                                "tests/unit/nimbus/test_worker_heartbeats_rpc.py")),
    # the worker's process shell: its link to ZooKeeper and Nimbus, heartbeats, error reporter,
    # peers and main, with the in-process unit tests that reach them (no ZooKeeper, no CLI
    # subprocess: fakes of the cluster state, the loop and the transport; a whole worker runs
    # in-process for WorkerProcess._run_worker, the slowest part of the run)
    "worker-shell": Target(tuple(f"src/stormpy/worker/{part}.py"
                                 for part in ("error_reporter", "peers", "heartbeats", "cluster_link",
                                              "process")),
                           tests=("tests/unit/worker/test_worker_shell_*.py",
                                  "tests/unit/worker/test_error_reporter.py",
                                  "tests/unit/worker/test_worker_heartbeats.py",
                                  "tests/unit/worker/test_worker_process_helpers.py",
                                  "tests/unit/worker/test_latency_sampling.py",
                                  "tests/unit/topology/test_component_metrics.py",
                                  "tests/unit/config/test_config_sections.py",
                                  "tests/unit/config/test_security_settings.py")),
    # the four small worker files in one run (one test-stats pass instead of four; the summary
    # still scores each file)
    "worker-small": Target(tuple(f"src/stormpy/worker/{part}.py"
                                 for part in ("stats", "values", "offloop", "factory")),
                           pytest_args=WORKER_PYTEST_ARGS),
    "nimbus": Target(("src/stormpy/nimbus/uploads.py", "src/stormpy/scheduler/even.py")),
    # the client side of the Nimbus protocol: seeds, leader discovery and memo, the bundle
    # transfer, failover, every call NimbusClient makes (stand-in Nimbus servers on loopback; no
    # ZooKeeper), and the submit check the client runs before uploading
    "client": Target(("src/stormpy/client/*.py",),
                     tests=("tests/unit/client/test_client_*.py", "tests/unit/**/test_nimbus_client_*.py",
                            "tests/unit/nimbus/test_nimbus_lost_leadership.py",
                            "tests/unit/rpc/test_rpc_config.py",
                            "tests/unit/multilang/test_multilang_settings_at_submit.py")),
    # Nimbus's scale work: the leader's in-memory StormBases and assignments, the topology
    # manager over them and the monitor's rounds (liveness, heartbeat cache, spreading, clean-up),
    # with the unit tests that drive them over the in-memory cluster state on simulated time
    "nimbus-scale": Target(tuple(f"src/stormpy/nimbus/{part}.py"
                                 for part in ("leader_records", "topologies", "monitor")),
                           tests=tuple(f"tests/unit/nimbus/test_{part}.py"
                                       for part in ("nimbus_records_copy", "nimbus_manager_transitions",
                                                    "nimbus_liveness_rules", "nimbus_leader_records",
                                                    "nimbus_monitor", "nimbus_lost_leadership",
                                                    "nimbus_task_totals", "nimbus_hostile_input",
                                                    "state_submit_warning", "worker_heartbeats_rpc"))),
    # the rest of Nimbus: the RPC handler (its undecorated parts: `@rpc_method` bodies are not
    # mutated), the submission's checks and writes, topology info, leadership, replication to
    # standbys, bundle recovery, the worker heartbeats' store, the bundle store, downloads, local
    # dirs, credentials, pending actions and the daemon's wiring, with the unit tests that drive
    # them in-process over the in-memory cluster state (no ZooKeeper, no CLI subprocess)
    "nimbus-daemon": Target(tuple(f"src/stormpy/nimbus/{part}.py"
                                  for part in ("handler", "submission", "validation", "info", "leadership",
                                               "replication", "recovery", "worker_beats", "store",
                                               "downloads", "localdirs", "credentials",
                                               "pending_actions", "daemon")),
                            tests=("tests/unit/nimbus/test_nimbus_*.py",
                                   "tests/unit/nimbus/test_state_submit_warning.py",
                                   "tests/unit/nimbus/test_worker_heartbeats_rpc.py",
                                   "tests/unit/state/test_state_provider_at_submit.py",
                                   "tests/unit/multilang/test_multilang_settings_at_submit.py",
                                   "tests/unit/topology/test_component_metrics.py",
                                   "tests/unit/worker/test_reported_errors.py",
                                   "tests/unit/config/test_security_settings.py",
                                   "tests/unit/supervisor/test_heartbeat_path_rpc.py",
                                   "tests/unit/ui/test_ui_units.py")),
    # micro-batching (stormpy/_batching.py) and the Spark bolt's batch records
    "batching": Target(("src/stormpy/*batching.py",)),
    # the Spark bolt's own logic, against a fake Spark (tests/unit/connectors/spark/test_spark_bolt_logic.py;
    # tests/spark runs it against a real local Spark, one JVM per run: too slow per mutant)
    # (settings.py holds the bolt's argument and tick checks since the split of bolt.py)
    "spark-bolt": Target(("src/stormpy/connectors/spark/_bolt.py",
                          "src/stormpy/connectors/spark/_settings.py",
                          "src/stormpy/connectors/spark/_in_spark.py",
                          "src/stormpy/connectors/spark/_ahead.py",
                          "src/stormpy/connectors/spark/_switching.py"),
                         tests=("tests/unit/connectors/spark/test_spark_bolt_logic.py",
                                "tests/unit/connectors/spark/test_spark_ahead.py",
                                "tests/unit/connectors/spark/test_spark_switching.py",
                                "tests/unit/config/test_settings_checks.py")),
    # Kafka: the acked-prefix tracker shared by connectors, the OffsetManager and the retry service
    "kafka": Target(("src/stormpy/connectors/_offsets.py", "src/stormpy/connectors/kafka/_offset_manager.py",
                     "src/stormpy/connectors/kafka/_retry.py"),
                    tests=("tests/unit/connectors/kafka/test_kafka_*.py",)),
    # Kafka: the spout's and the bolt's settings and their refusals, records to tuples, the
    # message ids, which partitions a spout task reads and where it starts, the partitions and
    # commits half of the spout, and the connectors' one way to report an error (the Kafka unit
    # tests drive them against the in-process broker stand-in; no broker per mutant)
    "kafka-config": Target((*(f"src/stormpy/connectors/kafka/{part}.py"
                              for part in ("_config", "_bolt_config", "_translator", "_assignment",
                                           "_messages", "_partitions")),
                            "src/stormpy/connectors/_reporting.py"),
                           tests=("tests/unit/connectors/kafka/test_kafka_*.py",
                                  "tests/unit/connectors/test_connector_error_reports.py")),
    # Kafka: the spout's emitting half (polled records to tuples, retries, the uncommitted cap),
    # the confluent-kafka consumer adapter (against a fake confluent_kafka module) and the spout
    # shell (open, next_tuple, ack/fail, metrics, close), over the unit tests' stub consumer
    "kafka-spout": Target(tuple(f"src/stormpy/connectors/kafka/{part}.py"
                                for part in ("_emitting", "_client", "_spout")),
                          tests=("tests/unit/connectors/kafka/test_kafka_*.py",)),
    # Kafka: the bolt (records, delivery reports, acks and fails, the backlog), the opaque
    # transactional spout and the exactly-once sinks (Trident state, transactional committer),
    # with the Kafka unit tests that drive them against stub producers and consumers (no broker)
    "kafka-bolt": Target(tuple(f"src/stormpy/connectors/kafka/{part}.py"
                               for part in ("_bolt_batches", "_bolt_delivery", "_bolt", "_opaque",
                                            "_trident_sink", "_transactional_sink")),
                         tests=("tests/unit/connectors/kafka/test_kafka_*.py",
                                "tests/unit/connectors/test_kafka_eos_off_loop.py",
                                "tests/unit/connectors/test_connector_error_reports.py")),
    # Kinesis: the InflightRecordTracker, the shards (assignment by the connectors' shared
    # round-robin share, a shard's checkpoint), the state manager (resharding order, checkpoint
    # writes) and the buffered GetRecords reader; the checkpoint store, the boto3 client wrapper
    # and the spout shell are in kinesis-spout
    "kinesis": Target((*(f"src/stormpy/connectors/kinesis/{part}.py"
                         for part in ("_tracker", "_shards", "_state", "_getter")),
                       "src/stormpy/connectors/_partitions.py"),
                      tests=("tests/unit/connectors/kinesis/test_kinesis_parts.py",
                             "tests/unit/**/test_kinesis_tracker*.py",
                             "tests/unit/**/test_kinesis_getter*.py", "tests/unit/**/test_kinesis_shard*.py",
                             "tests/unit/connectors/test_connector_partitions.py")),
    # Kinesis: the spout shell (setup off the loop, emitting, acks and fails), its settings, records
    # and message ids, record schemes, the checkpoint documents and store, the boto3 client wrapper
    # and its errors: against fakes of the Kinesis client and the state layer's memory store (no
    # kinesalite per mutant)
    "kinesis-spout": Target(tuple(f"src/stormpy/connectors/kinesis/{part}.py"
                                  for part in ("_config", "_records", "_scheme", "_errors",
                                               "_checkpoints", "_client", "_spout")),
                            tests=("tests/unit/connectors/kinesis/test_kinesis_*.py",
                                   "tests/unit/connectors/test_kinesis_checkpoint_store_setting.py",
                                   "tests/unit/connectors/test_connector_error_reports.py")),
    # Spark's small pure parts: the availability checks, code shipping and the master probe,
    # batches to Arrow and results back (no Spark session per mutant)
    "spark-parts": Target(tuple(f"src/stormpy/connectors/spark/{part}.py"
                                for part in ("_errors", "_code", "_arrow")),
                          tests=("tests/unit/connectors/spark/test_spark_code_shipping.py",
                                 "tests/unit/connectors/spark/test_spark_small_parts.py")),
    # the Spark connector's session: the builder settings from the topology's spark.* config, one
    # session per worker process, replacing a dead one, stopping it and the JVM at exit (against a
    # stand-in SparkSession builder and Py4J gateway: no JVM per mutant)
    "spark-session": Target(("src/stormpy/connectors/spark/_session.py",),
                            tests=("tests/unit/connectors/spark/test_spark_session_parts.py",
                                   "tests/unit/connectors/spark/test_spark_session_holders.py",
                                   "tests/unit/connectors/spark/test_spark_code_shipping.py")),
    # the Spark committer of transactional topologies: its checks, columns, the part written once
    # per txid and task through a temporary directory (a stand-in get_spark: no Spark session)
    "spark-committer": Target(("src/stormpy/connectors/spark/_committer.py",),
                              tests=("tests/unit/connectors/spark/test_spark_committer_parts.py",
                                     "tests/unit/connectors/spark/test_spark_switching.py")),
    # transactional topologies, the whole package: the coordinator spout, the coordinated
    # (batch/committer) bolt with its per-batch tracking and counting collector, the exactly-once
    # values committers apply, the emitter executors and their rotating state, the store choice,
    # the settings, the builder's wiring, the user API and the memory spout
    "transactional": Target(("src/stormpy/transactional/*.py",),
                            tests=("tests/unit/transactional/test_transactional_*.py",)),
    # windowing: the window manager (count/duration, event time, watermarks), its config and bolt
    "windowing": Target(("src/stormpy/windowing/*.py",),
                        tests=("tests/unit/windowing/test_window*.py", "tests/unit/state/test_state.py")),
    # stateful bolts: the checkpoint spout's protocol, the executors that run it around bolts,
    # the key-value state's prepare/commit/rollback and the wiring
    "state": Target(tuple(f"src/stormpy/state/{part}.py"
                          for part in ("_checkpoint", "_bolt", "_kv", "_wiring")),
                    tests=("tests/unit/state/test_state.py", "tests/unit/**/test_state_*.py",
                           "tests/unit/state/test_kv_packed_checkpoint.py",
                           "tests/unit/transactional/test_transactional_state.py")),
    # the checkpoint packing of the key-value state and the executors around stateful bolts
    # (INITSTATE), with the unit tests that cover them: the state target's two changed files
    "state-kv-bolt": Target(("src/stormpy/state/_kv.py", "src/stormpy/state/_bolt.py"),
                            tests=("tests/unit/state/test_kv_packed_checkpoint.py",
                                   "tests/unit/state/test_state_kv_*.py",
                                   "tests/unit/state/test_state_executors.py",
                                   "tests/unit/state/test_state.py")),
    # the state layer under them all (stateful bolts, transactional topologies, Kinesis
    # checkpoints, context.state_store): the store contract's shared parts, the memory and SQLite
    # backends, the settings and the provider that opens a task's store (the Redis and ZooKeeper
    # backends are the state-backends target's)
    "state-layer": Target(tuple(f"src/stormpy/state/{part}.py"
                                for part in ("_base", "_memory", "_sqlite", "_settings", "_provider")),
                          tests=("tests/unit/**/test_state*.py", "tests/unit/state/test_local_state.py",
                                 "tests/unit/state/test_sqlite_store_open.py")),
    # the state backends beside the layer's core: Redis (compare-and-set with WATCH, batched
    # pipelines, the recursive delete script, polled watches, errors naming the address and the
    # provider) and ZooKeeper (compare-and-set over lost connections, areas, watches) against the
    # session's real servers, StatefulBolt and the submit-time warning about state kept on one
    # host; mutmut's per-mutant run is a fresh pytest session in a forked child, so each mutant
    # starts its own redis-server (tens of ms) or ZooKeeper (about 2 s), see docs/testing.md
    "state-backends": Target(tuple(f"src/stormpy/state/{part}.py"
                                   for part in ("_redis_store", "_zookeeper", "_api", "_deployment")),
                             tests=("tests/unit/**/test_state*.py", "tests/unit/state/test_redis_store_*.py",
                                    "tests/unit/state/test_local_state.py")),
    # multilang: the protocol's checks, the JSON and msgpack framing, the shell components
    # (restart backoff, max pending, the spout's one-command-at-a-time exchange, the watchdog)
    # and the in-process pystorm adapter; the unit tests that run real shell bolts (the
    # documented Python and Node.js ones, a crashing one) are the only ones reaching the
    # subprocess side (_process.py, the shell bolt's exchange); the integration tests
    # (tests/integration/test_multilang_*.py) are too slow per mutant, and so are the pystorm
    # adapter's LocalCluster tests (1-2 s each): the adapter is judged by the tests that drive
    # it in the test's thread (test_multilang_pystorm_direct.py)
    # (and the handle naming a pystorm component, its subprocess runner and streamparse's DSL,
    # judged by the tests that build topologies from them; the streamparse word count's
    # LocalCluster run is left out)
    "multilang": Target(tuple(f"src/stormpy/multilang/{part}.py"
                              for part in ("_protocol", "_serializers", "_shell", "_shell_bolt",
                                           "_shell_spout", "_process", "_pystorm_adapter",
                                           "_pystorm_spec", "pystorm_run", "streamparse")),
                        tests=tuple(f"tests/unit/multilang/test_multilang_{part}.py"
                                    for part in ("docs_bolts", "protocol", "pystorm_direct",
                                                 "serializers", "settings_at_submit",
                                                 "shell_bolt_exchange", "shell_declare",
                                                 "shell_host", "shell_process", "pystorm_spec",
                                                 "streamparse", "streamparse_dsl")),
                        pytest_args=("--deselect", "tests/unit/multilang/test_multilang_streamparse.py"
                                     "::test_the_streamparse_word_count_runs_in_process")),
    # the decoders of what other processes send: bundles (manifest, zip entries, hashing, the
    # build's exclusions) and the RPC layer (codec, method argument checks, refusals, retries,
    # the client and server over loopback sockets); the unit tests that reach them, fuzz
    # regressions included
    "bundle": Target(("src/stormpy/bundle/*.py",)),
    # the command line behind a first `stormpy local` and `stormpy jar`: the --idle-stop rule,
    # MODULE[:ATTR] loading, jar's bundle report, the local run's summary and notes; in-process
    # tests only (CliRunner in the test's process, never `python -m stormpy` subprocesses)
    # the command line: every module of the package (mutmut leaves the click-decorated commands
    # alone; their logic lives in plain functions that are mutated) with the in-process tests
    # (click's CliRunner or the functions called directly), never a `python -m stormpy` subprocess
    "cli": Target(("src/stormpy/cli/*.py",), skip=("*/cli/__main__.py",),
                  tests=("tests/unit/cli/test_cli_idle_watch.py",
                         "tests/unit/cli/test_cli_local_summary.py",
                         "tests/unit/cli/test_cli_output_escaping.py",
                         "tests/unit/cli/test_cli_monitor.py",
                         "tests/unit/cli/test_cli_logs_rotation.py",
                         "tests/unit/cli/test_cli_config.py",
                         "tests/unit/cli/test_cli_unit_*.py")),
    # the checks of the connectors' and features' settings classes (`stormpy._settings`)
    "settings": Target(("src/stormpy/_settings.py",),
                       tests=("tests/unit/config/test_settings_checks.py",
                              "tests/unit/config/test_settings_unit_*.py")),
    "rpc": Target(("src/stormpy/rpc/*.py",),
                  # not every unit test: tests that start `python -m stormpy.cli` import the
                  # mutated rpc package in a process outside mutmut's (its import-time calls
                  # fail there)
                  tests=("tests/unit/rpc", "tests/unit/client", "tests/unit/nimbus",
                         "tests/unit/supervisor", "tests/unit/worker/test_worker_heartbeat*.py")),
    # messaging: the frame codec (frames come from other processes), CURVE keys and the ZAP gate,
    # and the three transports (none, in-process, ZeroMQ over loopback sockets); the tests that
    # encode and decode worker frames beside the package's own
    "messaging": Target(("src/stormpy/messaging/*.py",),
                        tests=("tests/unit/messaging/test_*.py",
                               "tests/unit/config/test_security_settings.py",
                               "tests/unit/worker/test_column_wire.py",
                               "tests/unit/worker/test_run_edge_states.py",
                               "tests/unit/topology/test_transfer_run_counts.py")),
    # configuration: the kinds of values (checks), the submit check (validate), the key table's
    # rules, the state provider's and the multilang settings, with the config unit tests and the
    # tests of those settings at submit (the state and multilang packages' own)
    "config": Target(("src/stormpy/config/*.py",),
                     tests=("tests/unit/config", "tests/unit/state/test_state_provider.py",
                            "tests/unit/state/test_state_provider_at_submit.py",
                            "tests/unit/multilang/test_multilang_settings_at_submit.py")),
    # the supervisor: assignments reconciled into worker processes, exits and their reasons,
    # crash-loop and download back-offs, the persistent id, adoption, clean-up, the heartbeat
    # relay, bundles sent back and the daemon's rounds, driven in-process (fake cluster state,
    # stand-in Nimbus servers on loopback, short-lived child processes; no ZooKeeper); the whole
    # test directory, so a new test file there keeps the cached results
    "supervisor": Target(("src/stormpy/supervisor/*.py",),
                         tests=("tests/unit/supervisor", "tests/unit/rpc/test_rpc_config.py"),
                         # its classes log through ``self.log`` (the supervisor's own logger)
                         extra={"do_not_mutate_patterns": [*NO_MUTATE_LINES, SELF_LOG_LINES]}),
    # the log server: safe access to the log directory (paths refused, paging, search, the
    # clean-up of dead workers' logs) and its REST app, with the log reader that pages through it
    "logviewer": Target(("src/stormpy/logviewer/*.py",),
                        tests=("tests/unit/logviewer", "tests/unit/cli/test_cli_logs_rotation.py")),
    # the host services every daemon is built from: backoff, waits, the service loop, daemon
    # signal handling, processes and child servers, capped log files, ports, the web thread; the
    # fast unit tests that reach them (no CLI subprocess: it imports the mutants outside mutmut)
    "host": Target(("src/stormpy/host/*.py",),
                   tests=("tests/unit/host", "tests/unit/logviewer",
                          "tests/unit/cli/test_cli_logs_rotation.py",
                          "tests/unit/cluster/test_zk_start_wait.py")),
    # the topology API: the builder, component specs, streams, fields and groupings, the
    # topology spec and its build-time checks, the task context, user metrics, hooks, the clock,
    # column batches, the task layout, imports (and the tuple: compiled with the tuple path, but
    # no other target mutates it); with the topology unit tests (the directory: a new test file
    # there counts without changing the target) and the worker tests of groupings, column
    # batches and the event log's records
    "topology": Target(("src/stormpy/topology/*.py",),
                       tests=("tests/unit/topology", "tests/unit/worker/test_groupings.py",
                              "tests/unit/worker/test_column_batches.py",
                              "tests/unit/worker/test_event_logger_parts.py")),
    # Trident: the built-in operations, the planner (bolts, joins' groupings), the per-batch
    # processors (aggregations, persistent state), the map state of the three kinds, the bolts
    # running a plan, the stream graph, operations as data, the test spouts, the topology's
    # entry points and the Parquet state
    "trident": Target(tuple(f"src/stormpy/trident/{part}.py"
                            for part in ("_builtin", "_planner", "_processors", "_state", "_combine",
                                         "_stream", "_bolt", "_graph", "_operation", "_spout",
                                         "_topology", "_parquet")),
                      tests=("tests/unit/trident/test_trident_*.py",)),
    # the cluster state that needs no ZooKeeper server: the documents written to ZooKeeper
    # (encode/decode, refusals of malformed data naming the znode and field), the znode layout,
    # the workers' log levels and control requests, the supervisor's local layout, the change
    # hooks and the watches; with the cluster unit tests (the `test_cluster_*` files: a new one
    # there counts without changing the target) and the unit tests that read these documents
    # through the in-memory state (no ZooKeeper per mutant, no CLI subprocesses)
    "cluster": Target(tuple(f"src/stormpy/cluster/{part}.py"
                            for part in ("records", "paths", "worker_ops", "local_layout",
                                         "change_hooks", "watches")),
                      tests=("tests/unit/cluster/test_cluster_*.py",
                             "tests/unit/nimbus/test_nimbus_records_copy.py",
                             "tests/unit/nimbus/test_nimbus_leader_records.py",
                             "tests/unit/logviewer/test_logviewer_units.py",
                             "tests/unit/supervisor/test_supervisor_local_files.py")),
    # the ZooKeeper side of the cluster state: the connect string, identities and ACLs, the
    # bounded operation runner, the compound writes, kazoo's lock read, the ephemeral nodes kept
    # over session losses, the first connection's wait, the errors, ZkStorage and ClusterState;
    # the pure parts judged by stand-ins of kazoo's client, ZkStorage and ClusterState by one real
    # ZooKeeper per mutant's run (the session fixture, as in state-backends; about 2 s to start)
    "cluster-zk": Target(tuple(f"src/stormpy/cluster/{part}.py"
                               for part in ("zk_hosts", "zk_acls", "zk_writes", "zk_locks",
                                            "zk_operations", "zk_ephemerals", "zk_start", "errors",
                                            "state", "storage")),
                         tests=("tests/unit/cluster/test_zk_*.py",
                                "tests/unit/cluster/test_cluster_state_records.py",
                                "tests/unit/config/test_security_settings.py")),
    # the real ZooKeeper server as a child process (finding ZooKeeper and Java, the command line
    # and zoo.cfg, the start's wait on `conf`/`srvr`) and `stormpy dev-zookeeper`'s loop, judged
    # by a stand-in `java` (a Python script answering the four-letter words) and a stand-in server
    "zk-server": Target(("src/stormpy/cluster/zkserver.py", "src/stormpy/cluster/devzk.py"),
                        tests=("tests/unit/cluster/test_zookeeper_server_parts.py",
                               "tests/unit/cluster/test_zookeeper_harness_discovery.py",
                               "tests/unit/cluster/test_dev_zookeeper_loop.py")),
    # the UI's figures: the windows of a topology's counts, the Prometheus families and the
    # topology graph, with the UI's unit tests and the users' metrics export (the `stormpy ui`
    # command test starts the server under the CLI: left out)
    "ui": Target(tuple(f"src/stormpy/ui/{part}.py" for part in ("_windows", "_metrics", "_graph")),
                 tests=("tests/unit/ui/test_ui_*.py", "tests/unit/topology/test_user_metrics.py"),
                 pytest_args=("--deselect", "tests/unit/ui/test_ui_units.py::"
                              "test_stormpy_ui_prints_the_address_it_binds")),
    # the UI's app: the REST routes and actions, the documents in Storm's field names, the token
    # and CSRF rules, the operations (profiling, logs, debug), the pages, the Nimbus source and the
    # server's settings; the UI's unit tests (Starlette's TestClient over stand-in sources, no
    # cluster, no browser; the directory, so a new test file there keeps the cached results),
    # without the `stormpy ui` command test (it starts the server under the CLI)
    "ui-app": Target(tuple(f"src/stormpy/ui/{part}.py" for part in (
                         "_security", "_operations", "_source", "_pages", "_stormdocs", "_app",
                         "_server")),
                     tests=("tests/unit/ui",),
                     pytest_args=("--deselect", "tests/unit/ui/test_ui_units.py::"
                                  "test_stormpy_ui_prints_the_address_it_binds")),
    # the test kit users write their topology tests with: complete_topology, the mocked acks,
    # FeederSpout/Capture and the fixed-tuple spout, tracked topologies, the component unit
    # harness, the handles' registry, the StateStore conformance check and the ZooKeeper
    # availability check (the process cluster and Kafka modules only re-export), with the kit's
    # own unit tests (in-process LocalClusters under simulated time, each
    # well under a second; the CPU probe's subprocess test is left out)
    # the embedded parts a local run and the tests start: the daemon processes of a process
    # cluster and the Redis child server; their own unit tests (stand-in daemons, real
    # redis-server starts of tens of milliseconds), no CLI subprocess
    "local": Target(tuple(f"src/stormpy/local/{part}.py" for part in ("_processes", "_redis_server")),
                    tests=("tests/unit/local/test_local_processes.py",
                           "tests/unit/local/test_local_redis_server.py")),
    # the Kafka brokers a local run and the tests start: the broker base and tansu, Apache Kafka's
    # KRaft child process, and which one `stormpy dev-kafka` runs; stand-in "java" and "tansu"
    # binaries (small scripts), a temporary Kafka home and a driven clock, never a JVM per mutant
    "local-kafka": Target(tuple(f"src/stormpy/local/{part}.py"
                                for part in ("_dev_kafka", "_kafka_broker", "_apache_kafka")),
                          tests=("tests/unit/local/test_local_dev_kafka_parts.py",
                                 "tests/unit/local/test_local_kafka_broker_parts.py",
                                 "tests/unit/local/test_local_apache_kafka_parts.py",
                                 "tests/unit/cli/test_cli_dev_kafka_progress.py")),
    # the in-process LocalCluster (submit, kill, activate, simulated time, state, stats,
    # shutdown): its contract tests and the fast in-process tests that run topologies on it
    # (simulated time, well under a second each; no CLI subprocess)
    "local-cluster": Target(("src/stormpy/local/_cluster.py",),
                            tests=("tests/unit/local/test_local_cluster_contract.py",
                                   "tests/unit/local/test_local_dealing.py",
                                   "tests/unit/topology/test_storm_semantics.py",
                                   "tests/unit/topology/test_metrics_consumer.py",
                                   "tests/unit/topology/test_component_metrics.py",
                                   "tests/unit/config/test_submit_check_rules.py",
                                   "tests/unit/testing/test_testing_kit_units.py")),
    # the Spark standalone master and workers of dev-spark and the tests, against a stand-in
    # spark-class (a small script) in a temporary SPARK_HOME: no JVM per mutant
    "local-spark": Target(("src/stormpy/local/_spark_cluster.py",),
                          tests=("tests/unit/local/test_local_spark_cluster_parts.py",)),
    "testing": Target(tuple(f"src/stormpy/testing/{part}.py"
                            for part in ("_complete", "_acks", "_components", "_tracking", "_unit",
                                         "_cluster", "_kafka", "_registry", "_state", "_zookeeper")),
                      tests=("tests/unit/testing/test_testing_kit_*.py",
                             "tests/unit/testing/test_complete_topology_timeouts.py",
                             "tests/unit/testing/test_waiting_kit.py")),
    # the package root: public names given to what internal modules define, and the choice
    # between the compiled tuple path and its sources (pure functions over a temporary tree)
    "package-root": Target(("src/stormpy/_public.py", "src/stormpy/_native.py"),
                           tests=("tests/unit/topology/test_native.py",
                                  "tests/unit/project/test_public_api.py",
                                  "tests/unit/topology/test_internal_module_paths.py",
                                  "tests/unit/project/test_package_root.py"),
                           # the subprocess checks import the installed tree, whose extensions
                           # are older than mutmut's copied sources: they judge the checkout,
                           # not a mutant (they stay in make test)
                           pytest_args=("--deselect", "tests/unit/topology/test_native.py::"
                                        "test_stormpy_pure_loads_every_module_from_source",
                                        "--deselect", "tests/unit/topology/test_native.py::"
                                        "test_the_compiled_set_is_used_whole_or_not_at_all",
                                        "--deselect", "tests/unit/project/test_public_api.py::"
                                        "test_public_names_on_the_pure_and_the_compiled_tuple_path",
                                        # counts frames: mutmut's trampoline adds two
                                        "--deselect", "tests/unit/project/test_package_root.py::"
                                        "test_the_stale_build_warning_names_the_line_that_"
                                        "imported_stormpy")),
}
#: what ``make mutate`` runs when no target is named
CORE = ("acker", "nimbus", "batching", "spark-bolt", "worker")

#: mutmut's exit codes per mutant (mutmut/stats.py), folded into the few states reported here
KILLED = {1, 3, 36, -24, 24, 152, 255, 37}  # failed tests, timeouts, type check
SURVIVED = {0}
NO_TESTS = {5, 33}
NOT_RUN = {None, 2, 34}
EQUIVALENTS_FILE = ROOT / "tools" / "mutation_equivalents.txt"


def source_files(target: Target) -> list[str]:
    """The files a target mutates (paths relative to the repository root), sorted."""
    found = []
    for path in sorted((ROOT / "src").rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if (any(fnmatch.fnmatch(rel, p) for p in target.mutate)
                and not any(fnmatch.fnmatch(rel, p) for p in (*target.skip, *ALWAYS_SKIP))):
            found.append(rel)
    return found


def uncovered_files() -> dict[str, list[tuple[str, int]]]:
    """The source files no target mutates (:data:`ALWAYS_SKIP` aside), by package
    (``stormpy.<package>``; top-level modules under ``stormpy``), each with its line count."""
    covered = {rel for target in TARGETS.values() for rel in source_files(target)}
    found: dict[str, list[tuple[str, int]]] = {}
    for path in sorted((ROOT / "src").rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if rel in covered or any(fnmatch.fnmatch(rel, p) for p in ALWAYS_SKIP):
            continue
        parts = path.relative_to(ROOT / "src").parts
        package = ".".join(parts[:2]) if len(parts) > 2 else parts[0]
        found.setdefault(package, []).append((rel, len(path.read_text().splitlines())))
    return found


def repo_entries() -> list[str]:
    """The repository's top-level files and directories that tests may read (all but the sources,
    which mutmut copies itself, the project file, VCS and caches)."""
    leave = {"src", "pyproject.toml", ".git", ".mutmut", ".venv", "build", ".hypothesis",
             ".pytest_cache", ".ruff_cache", ".mypy_cache"}
    return sorted(p.name for p in ROOT.iterdir() if p.name not in leave)


def test_paths(target: Target) -> list[str]:
    """The target's test patterns expanded (a pattern matching nothing is an error)."""
    paths = []
    for pattern in target.tests:
        found = sorted(p.relative_to(ROOT).as_posix() for p in ROOT.glob(pattern))
        if not found:
            sys.exit(f"no test file or directory matches {pattern!r}")
        paths.extend(found)
    return paths


def mutmut_config(target: Target, files: list[str]) -> dict[str, object]:
    return {
        "source_paths": ["src"],
        "only_mutate": files,
        "do_not_mutate_patterns": list(NO_MUTATE_LINES),
        "pytest_add_cli_args": ["-p", "no:cacheprovider", "-q", *ALWAYS_IGNORE, *target.pytest_args],
        "pytest_add_cli_args_test_selection": test_paths(target),
        "also_copy": repo_entries(),
        "process_isolation": target.isolation,
        "use_git_change_detection": False,
        **target.extra,
    }


def _toml_value(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    return json.dumps(value)


def prepare(name: str) -> Path:
    """Lay out ``.mutmut/<name>/``: links to the sources and tests, and a pyproject.toml that is
    the project's plus this target's ``[tool.mutmut]``. Copies of files that no longer exist in
    ``src`` (after a rename or split) are removed together with their cached results."""
    target = TARGETS[name]
    files = source_files(target)
    if not files:
        sys.exit(f"target {name!r}: no source file matches {target.mutate}")
    work = WORK / name
    work.mkdir(parents=True, exist_ok=True)
    for entry in ("src", *repo_entries()):
        link = work / entry
        if not link.is_symlink():
            link.symlink_to(ROOT / entry)
    config = mutmut_config(target, files)
    # mutants are numbered per function: when what gets mutated changes, cached results would be
    # pinned to the wrong mutants, so they are dropped
    generation = json.dumps({k: config[k] for k in ("only_mutate", "do_not_mutate_patterns")})
    stamp = work / "generation.json"
    if not stamp.exists() or stamp.read_text() != generation:
        shutil.rmtree(work / "mutants", ignore_errors=True)
        stamp.write_text(generation)
    project = (ROOT / "pyproject.toml").read_text()
    if "[tool.mutmut]" in project:
        sys.exit("pyproject.toml has its own [tool.mutmut]: the targets live in tools/mutate.py")
    section = "\n[tool.mutmut]\n" + "".join(
        f"{key} = {_toml_value(value)}\n" for key, value in config.items())
    (work / "pyproject.toml").write_text(project + section)
    mutated_src = work / "mutants" / "src"
    if mutated_src.is_dir():
        for copy in list(mutated_src.rglob("*.py")):
            source = ROOT / copy.relative_to(work / "mutants")
            if not source.exists():
                copy.unlink()
                Path(str(copy) + ".meta").unlink(missing_ok=True)
        refreshed = refresh_copies(mutated_src, set(files))
        if refreshed:
            print(f"   {name}: {refreshed} copied source file(s) out of date, refreshed from src", flush=True)
    return work


def refresh_copies(mutated_src: Path, mutated: set[str]) -> int:
    """Bring the work directory's copies of the files a target does not mutate up to date with
    ``src``: mutmut copies ``src`` into ``mutants/`` once and never again (it skips every file
    that exists there), so after the tree moved on a warm run would test the mutants against
    the old versions of every other module. The mutated files are left to mutmut (it regenerates
    one whose source is newer than its mutants). Returns how many copies were refreshed."""
    refreshed = 0
    for copy in mutated_src.rglob("*"):
        rel = copy.relative_to(mutated_src.parent).as_posix()
        source = ROOT / rel
        if rel in mutated or "__pycache__" in copy.parts or not copy.is_file() or not source.is_file():
            continue
        if copy.read_bytes() != source.read_bytes():
            shutil.copy2(source, copy)
            refreshed += 1
    return refreshed


#: seconds after which any wait of the local testing kit gives up in a mutation run
#: (tests/conftest.py): a mutant that breaks delivery fails its test this soon, not after the
#: test's own 10-30 s timeout; the unmutated suite meets every such wait within milliseconds
WAIT_CAP_SECS = 5


#: in a target's work directory: one JSON line per failing test of a mutant's run (the mutant,
#: the test, its phase, its error), written by tests/conftest.py; read by ``kills``
KILL_LOG = "kills.jsonl"


def mutation_env(work: Path | None = None) -> dict[str, str]:
    """The environment mutmut runs in: the pure-Python tuple path, no shrinking of failing
    property-test examples (a mutant is killed by the first failing example), waits capped;
    with ``work``, the test that kills each mutant is logged there (:data:`KILL_LOG`)."""
    env = {**os.environ, "STORMPY_PURE": "1", "STORMPY_HYPOTHESIS_PROFILE": "mutation",
           "STORMPY_TEST_WAIT_CAP": str(WAIT_CAP_SECS)}
    env.pop("STORMPY_MUTATION_KILL_LOG", None)
    if work is not None:
        env["STORMPY_MUTATION_KILL_LOG"] = str(work / KILL_LOG)
    env.pop("PYTHONPATH", None)  # mutmut puts mutants/src first; nothing else may shadow it
    return env


def call_mutmut(work: Path, log_name: str, *args: str) -> int:
    """``mutmut run ARGS`` in the target's work directory and :func:`mutation_env`, its output in
    ``work/log_name``; returns its exit code."""
    mutmut = Path(sys.executable).with_name("mutmut")
    with open(work / log_name, "w") as out:
        return subprocess.call([str(mutmut), "run", *args], cwd=work, env=mutation_env(work), stdout=out,
                               stderr=subprocess.STDOUT)


def run(name: str, children: int, mutants: list[str] | None = None, *,
        rerun_equivalents: bool = False) -> int:
    """Run mutmut on the target (only ``mutants`` when given). Pinned accepted equivalents are
    recorded as survivors first and not run again, unless ``rerun_equivalents``."""
    work = prepare(name)
    if not mutants and not rerun_equivalents:
        seeded = seed_equivalents(name)
        if seeded:
            print(f"   {name}: {seeded} pinned equivalent(s) recorded as survivors, not run again "
                  "(--rerun-equivalents runs them)", flush=True)
    print(f"== mutating {name}: {', '.join(source_files(TARGETS[name]))} (log: {work}/run.log)",
          flush=True)
    started = time.monotonic()
    code = call_mutmut(work, "run.log", "--max-children", str(children), *(mutants or []))
    print(f"   {name}: mutmut exited {code} after {time.monotonic() - started:.0f} s", flush=True)
    if code != 0:
        print((work / "run.log").read_text()[-3000:], file=sys.stderr)
    return code


@dataclass(frozen=True)
class Equivalent:
    """An accepted equivalent mutant: why, and the hash mutmut gave its function's source when it
    was judged (``None`` until ``tools/mutate.py pin`` records it)."""

    reason: str
    pin: str | None = None


def parse_equivalent(line: str) -> tuple[str, Equivalent] | None:
    """One line of tools/mutation_equivalents.txt (``name [@pin]  # reason``); None for a
    comment or a blank line."""
    head, _, reason = line.partition("#")
    fields = head.split()
    if not fields:
        return None
    pin = fields[1].removeprefix("@") if len(fields) > 1 and fields[1].startswith("@") else None
    return fields[0], Equivalent(reason.strip(), pin)


def equivalents() -> dict[str, Equivalent]:
    """Mutant name -> accepted equivalent, from tools/mutation_equivalents.txt."""
    if not EQUIVALENTS_FILE.exists():
        return {}
    parsed = (parse_equivalent(line) for line in EQUIVALENTS_FILE.read_text().splitlines())
    return dict(entry for entry in parsed if entry is not None)


def module_of(rel: str) -> str:
    """``src/stormpy/worker/loop.py`` -> ``stormpy.worker.loop`` (mutmut's mutant name prefix)."""
    return rel.removeprefix("src/").removesuffix(".py").replace("/", ".")


def function_of(mutant: str) -> str:
    """The function key of a mutant in mutmut's meta files: ``pkg.mod.xǁClassǁname__mutmut_3``
    -> ``xǁClassǁname``."""
    return mutant.rpartition("__mutmut_")[0].rpartition(".")[2]


def in_file(mutant: str, rel: str) -> bool:
    """True when ``mutant`` is one of the mutants of the source file ``rel``."""
    prefix = module_of(rel) + "."
    return mutant.startswith(prefix) and "." not in mutant[len(prefix):]


def _meta(work: Path, rel: str) -> dict[str, Any] | None:
    path = work / "mutants" / (rel + ".meta")
    return json.loads(path.read_text()) if path.exists() else None


def accepted_in(rel: str, meta: dict[str, Any] | None,
                accepted: dict[str, Equivalent]) -> dict[str, Equivalent]:
    """The equivalents of one source file that still apply: unpinned ones by name, pinned ones
    only while their function's hash is the pinned one (an edited function numbers its mutants
    anew, so its equivalents must be judged again)."""
    hashes = (meta or {}).get("hash_by_function_name", {})
    return {name: eq for name, eq in accepted.items()
            if in_file(name, rel) and (eq.pin is None or hashes.get(function_of(name)) == eq.pin)}


def seed_equivalents(name: str) -> int:
    """Record the target's pinned equivalents as survivors before mutmut runs, so that they are
    not run again: mutmut keeps a mutant's cached result while its function's hash is unchanged,
    and tests every other mutant. Returns how many were seeded.

    A cold run (no meta file yet) gets a meta file holding only the pinned functions' hashes and
    their equivalents' results; mutmut's generation then keeps those results exactly where the
    function it generates has the pinned hash. A warm run seeds only mutants without a result
    whose function's cached hash is the pinned one."""
    work = WORK / name
    accepted = equivalents()
    seeded = 0
    for rel in source_files(TARGETS[name]):
        pinned = {m: eq for m, eq in accepted.items() if eq.pin and in_file(m, rel)}
        if not pinned:
            continue
        path = work / "mutants" / (rel + ".meta")
        meta = _meta(work, rel)
        if meta is None:
            meta = {"exit_code_by_key": {}, "hash_by_function_name": {}, "type_check_error_by_key": {},
                    "durations_by_key": {}, "estimated_durations_by_key": {}}
            for mutant, eq in pinned.items():
                meta["hash_by_function_name"][function_of(mutant)] = eq.pin
                meta["exit_code_by_key"][mutant] = 0
                seeded += 1
        else:
            hashes = meta["hash_by_function_name"]
            codes = meta["exit_code_by_key"]
            for mutant, eq in pinned.items():
                if mutant in codes and codes[mutant] is None and hashes.get(function_of(mutant)) == eq.pin:
                    codes[mutant] = 0
                    seeded += 1
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(meta, indent=4))
    return seeded


#: a mutant name filter that matches nothing: ``mutmut run`` with it generates the mutants and
#: collects which tests reach which function, then stops before testing any mutant
NO_MUTANT = "generate-only-no-such-mutant"


def generate(name: str) -> None:
    """Generate the target's mutants (and its test map) without testing any: mutmut stops, with
    an assertion naming the filter, once it finds no mutant matching :data:`NO_MUTANT`."""
    work = prepare(name)
    call_mutmut(work, "generate.log", NO_MUTANT)
    log = (work / "generate.log").read_text()
    if "nothing matches" not in log or not results(name):
        sys.exit(f"{name}: generating the mutants failed (log: {work}/generate.log):\n{log[-3000:]}")


def pin(names: list[str]) -> int:
    """Record, for every accepted equivalent of the targets whose last result is a survivor, the
    hash of its function as generated now (targets never run are generated first: their listed
    equivalents are then pinned as they stand). Returns how many entries changed."""
    accepted = equivalents()
    pins: dict[str, str] = {}
    for name in names:
        if not results(name):
            generate(name)
        for rel in source_files(TARGETS[name]):
            meta = _meta(WORK / name, rel)
            if meta is None:
                continue
            for mutant, code in meta["exit_code_by_key"].items():
                func_hash = meta["hash_by_function_name"].get(function_of(mutant))
                if mutant in accepted and code in SURVIVED | NO_TESTS | NOT_RUN and func_hash:
                    pins[mutant] = func_hash
    changed = 0
    lines = []
    for line in EQUIVALENTS_FILE.read_text().splitlines():
        entry = parse_equivalent(line)
        if entry is not None and entry[0] in pins and entry[1].pin != pins[entry[0]]:
            line = f"{entry[0]} @{pins[entry[0]]}  # {entry[1].reason}"
            changed += 1
        lines.append(line)
    EQUIVALENTS_FILE.write_text("\n".join(lines) + "\n")
    return changed


def results(name: str) -> dict[str, dict[str, int | None]]:
    """Per source file: mutant name -> mutmut exit code (None: not run yet)."""
    found = {}
    for rel in source_files(TARGETS[name]):
        meta = _meta(WORK / name, rel)
        if meta is not None:
            found[rel] = meta["exit_code_by_key"]
    return found


def accepted_for(name: str) -> set[str]:
    """The target's accepted equivalents that still apply (see :func:`accepted_in`)."""
    accepted = equivalents()
    return {mutant for rel in source_files(TARGETS[name])
            for mutant in accepted_in(rel, _meta(WORK / name, rel), accepted)}


def stale(per_file: dict[str, dict[str, int | None]], applying: set[str]) -> list[str]:
    """Of a target's mutants (``results``), the listed equivalents that no longer apply: pinned to
    a function hash that is no longer the function's, so the function was edited since they were
    judged; they count as survivors until judged and pinned again."""
    listed = equivalents()
    return sorted(m for codes in per_file.values() for m in codes if m in listed and m not in applying)


def summary(names: list[str]) -> None:
    print(f"{'target / file':<46} {'mutants':>7} {'killed':>6} {'surv.':>5} {'no test':>7} "
          f"{'equiv.':>6} {'not run':>7} {'score':>6}")
    for name in names:
        per_file = results(name)
        if not per_file:
            print(f"{name:<46} (not run)")
            continue
        accepted = accepted_for(name)
        totals = [0, 0, 0, 0, 0, 0]
        rows = []
        for rel, codes in per_file.items():
            counts = [len(codes), 0, 0, 0, 0, 0]
            for mutant, code in codes.items():
                if code in KILLED:
                    counts[1] += 1
                elif mutant in accepted and code in SURVIVED | NO_TESTS:
                    counts[4] += 1
                elif code in SURVIVED:
                    counts[2] += 1
                elif code in NO_TESTS:
                    counts[3] += 1
                elif code in NOT_RUN:
                    counts[5] += 1
            rows.append((rel.removeprefix("src/stormpy/"), counts))
            totals = [a + b for a, b in zip(totals, counts)]
        for label, counts in [(name, totals), *(("  " + r, c) for r, c in rows)]:
            judged = counts[0] - counts[4] - counts[5]
            score = f"{100 * counts[1] / judged:.1f}%" if judged else "-"
            print(f"{label:<46} {counts[0]:>7} {counts[1]:>6} {counts[2]:>5} {counts[3]:>7} "
                  f"{counts[4]:>6} {counts[5]:>7} {score:>6}")
        outdated = stale(per_file, accepted)
        if outdated:
            print(f"  {len(outdated)} equivalent(s) pinned to an edited function count as survivors until "
                  f"judged again: {', '.join(outdated)}")
    print("score = killed / (mutants - accepted equivalents - not run yet); survivors and mutants "
          "no test reaches count against it")


def unkilled(name: str) -> list[str]:
    """The target's surviving and untested mutants that are not accepted equivalents."""
    accepted = accepted_for(name)
    return [mutant for codes in results(name).values() for mutant, code in sorted(codes.items())
            if code in SURVIVED | NO_TESTS and mutant not in accepted]


def recheck(name: str, children: int) -> int:
    """Run the target's unkilled mutants again (after new tests), not the whole target."""
    names = unkilled(name)
    if not names:
        print(f"{name}: nothing to recheck")
        return 0
    return run(name, children, names)


def survivors(name: str) -> None:
    work = WORK / name
    mutmut = Path(sys.executable).with_name("mutmut")
    for mutant in unkilled(name):
        subprocess.call([str(mutmut), "show", mutant], cwd=work)


#: ``kills`` flags a function whose killed mutants (at least this many) all failed one test
#: with one error: a test failing without the mutant would look exactly like that
SUSPECT_KILLS = 5


def kills(name: str) -> None:
    """What killed the target's killed mutants (the last logged failure of each, :data:`KILL_LOG`):
    per function, the tests and errors that killed its mutants, most first. One test killing
    every mutant of a function with one error, whatever the mutant changed, is a false kill
    (the test fails without the mutant); a killed mutant without a logged failure is shown with
    its exit code (negative: a signal, such as a timeout; 1: run before the log existed)."""
    log = WORK / name / KILL_LOG
    last: dict[str, dict[str, str]] = {}
    if log.exists():
        for line in log.read_text().splitlines():
            record = json.loads(line)
            last[record["mutant"]] = record
    for codes in results(name).values():
        by_function: dict[str, list[str]] = {}
        for mutant, code in codes.items():
            if code in KILLED:
                by_function.setdefault(function_of(mutant), []).append(mutant)
        for function, killed in sorted(by_function.items()):
            causes: dict[tuple[str, str], int] = {}
            unlogged = []
            for mutant in killed:
                record = last.get(mutant)
                if record is None:
                    unlogged.append(f"{mutant.rpartition('__mutmut_')[2]} (exit {codes[mutant]})")
                    continue
                cause = (record["test"], f"{record['when']}: {record['error']}")
                causes[cause] = causes.get(cause, 0) + 1
            top = max(causes.values(), default=0)
            suspect = top == len(killed) >= SUSPECT_KILLS
            print(f"{function}: {len(killed)} killed"
                  + ("  <- all by one test with one error: check for a false kill" if suspect else ""))
            for (test, error), count in sorted(causes.items(), key=lambda item: -item[1])[:5]:
                print(f"   {count:>4} by {test}\n        {error[:160]}")
            if unlogged:
                print(f"   no failure logged: {', '.join(unlogged)}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=("run", "recheck", "summary", "survivors", "kills", "clean",
                                            "list", "pin", "uncovered"))
    parser.add_argument("targets", nargs="*", help=f"targets (default: {' '.join(CORE)})")
    parser.add_argument("--children", type=int, default=2, help="mutants tested at once")
    parser.add_argument("--mutants", nargs="+", metavar="PATTERN",
                        help="run: only the mutants whose names match (e.g. 'stormpy.trident._state.*')")
    parser.add_argument("--rerun-equivalents", action="store_true",
                        help="run: test the pinned equivalents too (a cold run re-judges them all)")
    args = parser.parse_args(argv)
    names = args.targets or list(TARGETS if args.command == "list" else CORE)
    unknown = [n for n in names if n not in TARGETS]
    if unknown:
        parser.error(f"unknown target(s) {', '.join(unknown)}; known: {', '.join(TARGETS)}")
    if args.command == "list":
        for name in names:
            print(f"{name}: {' '.join(source_files(TARGETS[name]))}  <- {' '.join(TARGETS[name].tests)}")
    elif args.command == "run":
        if args.mutants and len(names) != 1:
            parser.error("--mutants needs exactly one target")
        failed = [n for n in names
                  if run(n, args.children, args.mutants, rerun_equivalents=args.rerun_equivalents) != 0]
        summary(names)
        if failed:
            print(f"mutmut failed for: {', '.join(failed)}", file=sys.stderr)
            return 1
    elif args.command == "recheck":
        failed = [n for n in names if recheck(n, args.children) != 0]
        summary(names)
        if failed:
            return 1
    elif args.command == "summary":
        summary(names)
    elif args.command == "survivors":
        for name in names:
            survivors(name)
    elif args.command == "kills":
        for name in names:
            kills(name)
    elif args.command == "pin":
        print(f"{pin(names)} equivalent(s) pinned to their functions' current hashes")
    elif args.command == "uncovered":
        gaps = uncovered_files()
        for package, files in gaps.items():
            print(f"{package}: {len(files)} file(s), {sum(n for _, n in files)} lines")
            for rel, lines in files:
                print(f"  {rel} ({lines})")
        total = sum(n for files in gaps.values() for _, n in files)
        print(f"{sum(len(f) for f in gaps.values())} file(s), {total} lines in no target")
    elif args.command == "clean":
        for name in names:
            shutil.rmtree(WORK / name, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
