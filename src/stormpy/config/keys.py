"""The core configuration keys (``topology.*``, ``storm.*``, ``nimbus.*``, ``supervisor.*``,
``worker.*``, ``dev.*``, ``ui.*``), each with its default, meaning and type: the table
:mod:`stormpy.config` starts :data:`~stormpy.config.KEYS` and :data:`~stormpy.config.DEFAULTS`
from. Connectors' keys are not here: they register a :class:`~stormpy.config.ConfigSection`.

Contract: every core key has a ``check`` (:mod:`stormpy.config.checks`) saying what values it
takes; :func:`stormpy.config.validate.check_topology_config` applies them at submit and
:func:`stormpy.config.load_config` to daemon files, and the configuration reference
(docs/reference/configuration.md, filled from this table) shows them. Every key also takes None:
unset, so its default applies. Everything reading a key's default reads it from here
(:func:`stormpy.config.setting`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from stormpy.config.checks import AnyOf, Check, Choice, Custom, Flag, Int, ListOf, Map, Number, Port, Text
from stormpy.config.errors import SettingError
from stormpy.config.multilang import serializer_kind

__all__ = ["CORE_KEYS", "ConfigKey"]


@dataclass(frozen=True)
class ConfigKey:
    """One documented configuration key: its name, default, meaning and the values it takes
    (``check``; None only for a connector's keys, which its settings class checks)."""

    name: str
    default: Any
    doc: str
    check: Check | None = None


SECONDS = Number(0, above=True, unit="seconds")
HOSTS = ListOf(Text(), min_len=1, single=True)
IMPORT_PATH = Text(r"[\w.]+[:.][\w.]+", expected="an import path like 'package.module:Name'")


def metrics_consumers(key: str, value: Any) -> None:
    """``topology.metrics.consumer.register``: a list of ``{class, argument, parallelism.hint}``
    maps; SettingError naming the entry and its field."""
    if not isinstance(value, list | tuple):
        raise SettingError(key, f"must be a list of maps, got {value!r}")
    for i, entry in enumerate(value):
        where = f"{key}[{i}]"
        if not isinstance(entry, Mapping):
            raise SettingError(where, f"must be a map with a 'class', got {entry!r}")
        unknown = sorted(map(str, set(entry) - {"class", "argument", "parallelism.hint"}))
        if unknown:
            raise SettingError(where, f"has unknown fields {unknown} (known: class, argument, "
                                      "parallelism.hint)")
        cls = entry.get("class")
        if isinstance(cls, str):
            module, colon, name = cls.partition(":")
            if not colon or not module or not name or ":" in name:
                raise SettingError(f"{where}.class", f"must be an import path 'module:Class', "
                                                     f"got {cls!r}")
        elif not isinstance(cls, type):
            raise SettingError(f"{where}.class", "is missing or not an import path 'module:Class'")
        hint = entry.get("parallelism.hint", 1)
        if type(hint) is not int or hint < 1:
            raise SettingError(f"{where}.parallelism.hint", f"must be an integer >= 1, got {hint!r}")


def multilang_serializer(key: str, value: Any) -> None:
    """``topology.multilang.serializer``: a name :func:`~stormpy.config.multilang.serializer_kind`
    knows."""
    serializer_kind(value)


#: The core keys, in the order the configuration reference lists them.
CORE_KEYS: tuple[ConfigKey, ...] = (
    # --- topology ---------------------------------------------------------------------------
    ConfigKey("topology.workers", 1, "Number of worker processes the topology asks for.",
              Int(1)),
    ConfigKey("topology.acker.executors", None,
              "Acker executors; None means one per worker, 0 disables tracking (spout tuples are "
              "acked as soon as they are emitted).",
              Int(0)),
    ConfigKey("topology.message.timeout.secs", 30,
              "Seconds a spout tuple tree may take before it is failed.",
              SECONDS),
    ConfigKey("topology.enable.message.timeouts", True, "When false, unacked tuples never time out.",
              Flag()),
    ConfigKey("topology.max.spout.pending", None,
              "Maximum un-acked spout tuples per spout task; None is unlimited.",
              Int(1)),
    ConfigKey("topology.tick.tuple.freq.secs", None,
              "Send a tick tuple to every bolt task this often (seconds, fractions allowed); may be "
              "set per component.",
              SECONDS),
    ConfigKey("topology.debug", False, "Log every emitted tuple (slow; for debugging only).",
              Flag()),
    ConfigKey("topology.eventlogger.executors", None,
              "Event logger (sampled tuples, stormpy debug); None or a number >= 1: each worker "
              "logs its own sampled tuples to its events log; 0: no event logger.",
              Int(0)),
    ConfigKey("topology.executor.receive.buffer.size", 32768,
              "Tuples queued for one task before spouts in the worker stop emitting (backpressure).",
              Int(1)),
    ConfigKey("topology.stats.sample.rate", 0.05,
              "Share of bolt tuples whose execute and process latency are timed (0 to 1; Storm's "
              "sampling: an unsampled tuple costs no clock call). 0 times none.",
              Number(0, 1)),
    ConfigKey("topology.transfer.batch.size", 500,
              "Tuples packed into one message for a remote worker before it is sent.",
              Int(1)),
    ConfigKey("topology.batch.flush.interval.millis", 0,
              "Longest time a message for a remote worker that is not full waits; 0 sends it "
              "at the end of every executor loop round (lowest latency). More: fewer, larger "
              "messages, at up to that much latency per hop.",
              Number(0)),
    ConfigKey("topology.producer.batch.size", 1024,
              "Tuples a spout task's loop round may emit (a batch counting its rows) before the "
              "round moves on to the bolts and sends what is waiting; smaller: lower latency, "
              "more rounds per tuple. May be set per component.",
              Int(1)),
    ConfigKey("topology.transfer.buffer.size", 1000,
              "Frames queued per peer worker (ZeroMQ high-water mark) before spouts pause.",
              Int(1)),
    ConfigKey("topology.tasks", None,
              "Per component: its task count (Storm's setNumTasks); None is one per executor.",
              Int(1)),
    ConfigKey("topology.max.task.parallelism", None,
              "Caps every component's tasks (and so executors); a component's own value "
              "overrides the topology's, as in Storm. None is no cap.",
              Int(1)),
    ConfigKey("topology.disable.loadaware.messaging", False,
              "Accepted for Storm compatibility; changes nothing: shuffle grouping is always "
              "round-robin (docs/storm-semantics.md, item 7).",
              Flag()),
    ConfigKey("topology.auto.task.hooks", None,
              "TaskHook class paths built once per task of every user component "
              "(subclasses of stormpy.topology.TaskHook); may be set per component.",
              ListOf(IMPORT_PATH)),
    ConfigKey("topology.max.error.report.per.interval", 5,
              "Errors a task reports to ZooKeeper per throttle interval.",
              Int(1)),
    ConfigKey("topology.error.throttle.interval.secs", 10, "The error-report throttle interval.",
              SECONDS),
    ConfigKey("topology.metrics.consumer.register", None,
              "Metrics consumers: a list of {class: 'module:Class', argument, parallelism.hint}; "
              "each worker runs one of each and hands it its tasks' data points "
              "(stormpy.topology.IMetricsConsumer).",
              Custom(metrics_consumers, "a list of maps {class: 'module:Class', argument, "
                                        "parallelism.hint: integer >= 1}")),
    ConfigKey("topology.builtin.metrics.bucket.size.secs", 60,
              "Seconds between two deliveries of data points to the metrics consumers.",
              SECONDS),
    ConfigKey("topology.state.checkpoint.interval.ms", 1000,
              "How often the checkpoint spout of a topology with stateful bolts starts a "
              "checkpoint (prepare then commit of every stateful bolt's state).",
              Int(1)),
    ConfigKey("topology.state.provider", "memory",
              "Where stateful bolts keep their state: 'memory' (the LocalCluster's, or the "
              "worker process's), 'sqlite', 'zookeeper' (small state), 'redis' (or Storm's "
              "org.apache.storm.redis.state.RedisKeyValueStateProvider: a cluster, large "
              "state), or the import path of a function (conf, namespace) -> stormpy.state.Store.",
              AnyOf((Choice(("memory", "sqlite", "zookeeper", "redis")), IMPORT_PATH))),
    ConfigKey("topology.state.provider.config", None,
              "The provider's settings, a map or a JSON string: sqlite {\"path\": file, "
              "\"table\": name}; zookeeper {\"servers\": [...], \"port\": 2181, \"root\": "
              "\"/stormpy/state\"} (default: storm.zookeeper.*); redis {\"jedisPoolConfig\": "
              "{\"host\", \"port\", \"timeout\", \"password\", \"database\"}, \"keyPrefix\": "
              "\"stormpy\"}.",
              AnyOf((Map(), Text(expected="a JSON string")))),
    ConfigKey("topology.state.cache.max.keys", 100000,
              "How many committed keys a stateful bolt task's KeyValueState keeps in memory "
              "(an LRU cache; reads of other keys go to the store): bounds a task's memory "
              "whatever the size of its state.",
              Int(0)),
    ConfigKey("topology.message.timeout.secs.min", None,
              "Set by a component in its own config (windowed bolts do): the shortest "
              "topology.message.timeout.secs it works with; a shorter one is refused at submit.",
              Number(0)),
    ConfigKey("topology.max.spout.pending.min", None,
              "Set by a component in its own config (count windows do): the smallest "
              "topology.max.spout.pending it works with, when one is set; refused at submit.",
              Int(0)),
    ConfigKey("topology.spout.max.batch.size", 64,
              "How many next_tuple calls a spout task gets per executor-loop round (the round "
              "ends earlier once the spout emitted 1,024 tuples, a batch counting its rows).",
              Int(1)),
    ConfigKey("topology.worker.background.threads", 4,
              "Threads per worker for component work that runs off the executor loop "
              "(run_in_background, e.g. Spark jobs).",
              Int(1)),
    ConfigKey("topology.worker.gc.threshold", 50000,
              "The worker process's generation-0 garbage-collector threshold (Python's default is "
              "700): in-flight tuples are young objects, and at the default every few hundred "
              "tuples the collector walks all of them. The worker raises the threshold to this "
              "value when it is lower; 0 leaves the interpreter's setting alone (the storm "
              "analogue is GC flags in topology.worker.childopts).",
              Int(0)),
    ConfigKey("topology.worker.chaining", True,
              "Chaining: a tuple emitted on a worker's executor loop to a bolt task of the same "
              "worker runs that task's execute at once, inside the emit, when nothing is queued "
              "before it, the task is not already running and the chain is less than 16 deep; "
              "otherwise it is queued (docs/performance.md, \"Chaining\"). false always "
              "queues.",
              Flag()),
    # --- multilang (stormpy.multilang's shell components; Storm's keys and defaults) -------
    ConfigKey("topology.multilang.serializer", "org.apache.storm.multilang.JsonSerializer",
              "Wire format between a shell component and its subprocess: json (Storm's "
              "JsonSerializer, the default) or msgpack (pystorm's MsgpackSerializer); Storm's "
              "class names are read by their last part. May be set per component.",
              Custom(multilang_serializer, "json, msgpack, or a class name ending in "
                                           "JsonSerializer / MsgpackSerializer")),
    ConfigKey("topology.subprocess.timeout.secs", None,
              "Seconds a shell component's subprocess may stay silent (bolts: no message at all; "
              "spouts: a command unanswered) before it counts as hung and is restarted; None "
              "means supervisor.worker.timeout.secs.",
              SECONDS),
    ConfigKey("topology.shellbolt.max.pending", 100,
              "Tuples a shell bolt task queues for its subprocess's stdin, not yet written; "
              "further tuples wait in the bolt, in order, until the subprocess reads. May be set "
              "per component.",
              Int(1)),
    ConfigKey("topology.name", None, "Set by the submitter: the topology's name.",
              Text()),
    ConfigKey("topology.submitter.user", None,
              "Set by `stormpy jar` (not by users): the user who submitted the topology.",
              Text(empty=True, expected="a string")),
    ConfigKey("topology.submit.warnings", None,
              "Set by Nimbus and LocalCluster (not by users): the warnings of the submit check "
              "(stormpy.config.validate), shown by `stormpy info` and the topology's REST page.",
              ListOf(Text())),
    # --- nimbus -----------------------------------------------------------------------------
    ConfigKey("nimbus.seeds", ["127.0.0.1"],
              "Nimbus hosts (``host`` or ``host:port``; the port defaults to nimbus.thrift.port). "
              "Clients ask them which one leads; every Nimbus of an HA cluster is listed here.",
              HOSTS),
    ConfigKey("nimbus.host", "127.0.0.1",
              "Address Nimbus binds and clients connect to. Binding every interface (0.0.0.0 or "
              "*), Nimbus names itself by storm.local.hostname, else this machine's host name.",
              Text()),
    ConfigKey("nimbus.thrift.port", 6627, "Nimbus RPC port (Storm's name kept).",
              Port()),
    ConfigKey("nimbus.task.timeout.secs", 30,
              "Seconds without a worker heartbeat before Nimbus reassigns its executors; a Nimbus "
              "that becomes leader also waits this long before judging heartbeats (it holds "
              "them in memory only).",
              SECONDS),
    ConfigKey("nimbus.supervisor.timeout.secs", 60,
              "Seconds without a supervisor before Nimbus moves its executors elsewhere.",
              SECONDS),
    ConfigKey("nimbus.monitor.freq.secs", 10, "How often Nimbus checks heartbeats.",
              SECONDS),
    ConfigKey("nimbus.task.launch.secs", 120,
              "Grace period for a newly assigned worker to send its first heartbeat.",
              SECONDS),
    ConfigKey("nimbus.file.copy.expiration.secs", 600, "Abandoned uploads are removed after this.",
              SECONDS),
    ConfigKey("nimbus.max.bundle.size.bytes", 256 * 1024 * 1024, "Largest topology bundle accepted.",
              Int(1)),
    ConfigKey("nimbus.upload.chunk.size.bytes", 307200, "Chunk size for uploads and downloads.",
              Int(1)),
    ConfigKey("nimbus.upload.max.sessions", 64,
              "Upload sessions open at once on one Nimbus; begin_upload is refused beyond it.",
              Int(1)),
    ConfigKey("nimbus.upload.max.sessions.per.client", 8,
              "Upload sessions open at once per client address; begin_upload is refused beyond it.",
              Int(1)),
    ConfigKey("nimbus.upload.idle.secs", 120,
              "An upload session without a chunk for this long (or nimbus.file.copy.expiration.secs if "
              "shorter) is aborted and its file removed.",
              SECONDS),
    ConfigKey("nimbus.slots.perTopology", 256,
              "Most workers (topology.workers) one topology may ask for (Storm's key; Storm leaves "
              "it unbounded, stormpy bounds it so one submission cannot flood ZooKeeper).",
              Int(1)),
    ConfigKey("nimbus.executors.perTopology", 4096,
              "Most executors (acker executors included) one topology may have (Storm's key).",
              Int(1)),
    ConfigKey("nimbus.tasks.perTopology", 16384,
              "Most tasks (acker tasks included) one topology may have.",
              Int(1)),
    ConfigKey("nimbus.max.spec.size.bytes", 1024 * 1024,
              "Largest encoded topology spec plus config Nimbus accepts in submit_topology.",
              Int(1)),
    ConfigKey("storm.zookeeper.jute.maxbuffer", 1024 * 1024 - 1,
              "ZooKeeper's jute.maxbuffer (largest znode it accepts, bytes); Nimbus refuses a "
              "topology whose assignment or StormBase would encode larger, before writing anything.",
              Int(1)),
    ConfigKey("topology.min.replication.count", None,
              "Nimbus hosts (the leader included) that must hold a topology's bundle before "
              "submit_topology answers (Storm's key). None (the default) means 2 when nimbus.seeds "
              "names two or more Nimbus hosts, else 1; when the default cannot be met in time the "
              "submit goes ahead with a warning, when a count set explicitly cannot, it is refused.",
              Int(1)),
    ConfigKey("topology.max.replication.wait.time.sec", 60,
              "How long submit_topology waits for topology.min.replication.count copies (Storm's key; "
              "Storm's -1, wait forever, is not offered).",
              Number(0, unit="seconds")),
    ConfigKey("nimbus.leader.wait.secs", 30,
              "How long a client (CLI, supervisor) looks for a leader among nimbus.seeds before it "
              "gives up.",
              SECONDS),
    ConfigKey("nimbus.rpc.auth.token", None,
              "Shared secret every RPC to Nimbus must carry; None (or empty) turns auth off. Nimbus "
              "refuses other requests with AuthorizationError; the CLI and supervisors send the "
              "token of their own config. Not encrypted on the wire unless Nimbus RPC runs over "
              "CURVE (nimbus.rpc.curve.secret.key.file, docs/security.md).",
              AnyOf((Text(), Int()))),
    ConfigKey("nimbus.rpc.curve.secret.key.file", None,
              "File holding this Nimbus's CURVE secret key (Z85 text; `stormpy curve-keygen PATH`). "
              "When set, Nimbus RPC is encrypted with CurveZMQ and clients must know the server's "
              "public key (nimbus.rpc.curve.public.key); the token check stays on top.",
              Text()),
    ConfigKey("nimbus.rpc.curve.public.key", None,
              "Nimbus's CURVE public key (Z85) that clients (CLI, supervisors, UI) pin; set it "
              "wherever Nimbus has nimbus.rpc.curve.secret.key.file.",
              Text()),
    ConfigKey("nimbus.rpc.timeout.secs", 30,
              "How long a Nimbus client (CLI, supervisor downloads) waits for each RPC attempt.",
              SECONDS),
    ConfigKey("nimbus.rpc.retries", 1,
              "Extra attempts after a timeout (same request id, so never executed twice).",
              Int(0)),
    ConfigKey("nimbus.rpc.handler.threads", 4,
              "Threads executing Nimbus RPC calls (the handler is thread-safe), so a slow call such "
              "as a large upload chunk does not hold up the others.",
              Int(1)),
    ConfigKey("dev.zookeeper.path", None,
              "Data dir of `stormpy dev-zookeeper`; defaults to <storm.local.dir>/dev-zookeeper.",
              Text()),
    # --- supervisor / worker ----------------------------------------------------------------
    ConfigKey("supervisor.slots.ports", [6700, 6701, 6702, 6703], "Worker ports of this supervisor.",
              ListOf(Port())),
    ConfigKey("supervisor.host", "127.0.0.1", "Address workers of this supervisor bind.",
              Text()),
    ConfigKey("supervisor.worker.timeout.secs", 30,
              "Seconds without a local heartbeat before the supervisor restarts a worker (also a "
              "shell component subprocess's limit when topology.subprocess.timeout.secs is unset).",
              SECONDS),
    ConfigKey("supervisor.worker.start.timeout.secs", 120,
              "Grace period for a starting worker's first heartbeat.",
              SECONDS),
    ConfigKey("supervisor.monitor.frequency.secs", 3, "How often the supervisor checks its workers.",
              Number(0.1, unit="seconds")),
    ConfigKey("supervisor.heartbeat.frequency.secs", 5, "How often the supervisor heartbeats.",
              SECONDS),
    ConfigKey("worker.heartbeat.frequency.secs", 1, "How often a worker heartbeats.",
              Number(0.05, unit="seconds")),
    ConfigKey("task.heartbeat.frequency.secs", 3,
              "How often a worker publishes its heartbeat (executors and task statistics) and "
              "its supervisor sends its workers' heartbeats to the leading Nimbus over RPC, which "
              "Nimbus's liveness check and the UI read (none go to ZooKeeper); never more often "
              "than worker.heartbeat.frequency.secs, the local heartbeat the supervisor watches. "
              "Nimbus takes supervisors / this many heartbeat calls per second.",
              Number(0.05, unit="seconds")),
    ConfigKey("worker.bind.host", None, "Address workers bind; defaults to supervisor.host.",
              Text()),
    ConfigKey("worker.code.dir", None,
              "Set by a worker process (not by users): the directory of the topology's unpacked "
              "bundle code, on its sys.path; Spark bolts ship it to Spark executors.",
              Text()),
    ConfigKey("supervisor.worker.shutdown.sleep.secs", 10,
              "Grace period between SIGTERM and SIGKILL when a supervisor stops a worker (Storm "
              "uses 3; longer here so a Spark bolt's cleanup can finish its running job).",
              Number(0, unit="seconds")),
    # --- worker logs, log server, run-time operations (docs/operations.md) --------------------
    ConfigKey("worker.log.max.size.mb", 100,
              "Size (MB, fractions allowed) at which a worker's log file rotates; 0 never rotates.",
              Number(0, unit="MB")),
    ConfigKey("worker.log.backups", 9,
              "Rotated files kept per worker log (worker-T-P.log.1 ... .N); with the size, the cap "
              "on one worker's logs.",
              Int(1)),
    ConfigKey("worker.control.poll.secs", 1,
              "How often a worker re-reads its log levels and control requests (ZooKeeper "
              "watches wake it sooner).",
              SECONDS),
    ConfigKey("worker.profiler.tracemalloc.frames", 0,
              "When > 0, workers start tracemalloc at launch with this many frames, so heap "
              "summaries show allocations since launch (costs memory and speed).",
              Int(0)),
    ConfigKey("logviewer.port", 8000,
              "Port of the per-host log server each supervisor runs (0: a free port; -1: no "
              "log server). Published in the supervisor's ZooKeeper record.",
              Int(-1, 65535)),
    ConfigKey("logviewer.host", None, "Address the log server binds; defaults to supervisor.host.",
              Text()),
    ConfigKey("logviewer.cleanup.age.mins", 10080,
              "Logs of workers no longer running, untouched for this long, are deleted.",
              Number(0, above=True, unit="minutes")),
    ConfigKey("logviewer.cleanup.interval.secs", 600, "How often the log server cleans up.", SECONDS),
    # --- ui (`stormpy ui`, docs/operations.md) ------------------------------------------------
    ConfigKey("ui.host", "127.0.0.1",
              "Address the UI binds (Storm binds 0.0.0.0; use that, with ui.auth.token, to serve "
              "other machines).",
              Text()),
    ConfigKey("ui.port", 8080, "Port of the UI's web pages, REST API (/api/v1) and /metrics.",
              Port()),
    ConfigKey("ui.auth.token", None,
              "Token every POST to the UI must carry (Authorization: Bearer <token>); when unset, "
              "nimbus.rpc.auth.token is used; both unset leaves the UI open.",
              AnyOf((Text(), Int()))),
    ConfigKey("ui.auth.protect.gets", False,
              "When a token is set, require it on the GETs of /api/v1 and /metrics too.",
              Flag()),
    ConfigKey("ui.poll.secs", 2, "How often the UI reads the workers' heartbeats from ZooKeeper.",
              Number(0.1, unit="seconds")),
    ConfigKey("ui.nimbus.timeout.secs", 5,
              "How long the UI waits for Nimbus before answering 503 (Nimbus unreachable).",
              SECONDS),
    # --- zookeeper / storage ----------------------------------------------------------------
    ConfigKey("storm.zookeeper.servers", ["127.0.0.1"], "ZooKeeper hosts.",
              HOSTS),
    ConfigKey("storm.zookeeper.port", 2181, "ZooKeeper client port.",
              Port()),
    ConfigKey("storm.zookeeper.root", "/stormpy", "Root znode of all stormpy state.",
              Text(r"/.*", expected="a znode path starting with /")),
    ConfigKey("storm.zookeeper.session.timeout", 20000, "ZooKeeper session timeout (ms).",
              Int(1)),
    ConfigKey("storm.zookeeper.connection.timeout", 15000, "ZooKeeper connect timeout (ms).",
              Int(1)),
    ConfigKey("storm.zookeeper.retry.times", 5,
              "Retries of a daemon's first ZooKeeper connection (Nimbus, supervisor) when ZooKeeper "
              "does not answer within storm.zookeeper.connection.timeout; -1: until stopped.",
              Int(-1)),
    ConfigKey("storm.zookeeper.retry.interval", 1000,
              "Wait (ms) before the first retry of a daemon's first ZooKeeper connection; it "
              "doubles with each retry up to storm.zookeeper.retry.intervalceiling.millis.",
              Int(1)),
    ConfigKey("storm.zookeeper.retry.intervalceiling.millis", 30000,
              "Longest wait (ms) between retries of a daemon's first ZooKeeper connection.",
              Int(1)),
    ConfigKey("storm.zookeeper.auth.scheme", "digest",
              "Auth scheme of the daemons' ZooKeeper sessions (Storm's key; only digest is offered).",
              Choice(("digest",))),
    ConfigKey("storm.zookeeper.auth.payload", None,
              "Secret of the daemons' ZooKeeper identity (digest: user:password). When set, the "
              "daemons authenticate with it and create their nodes writable by that identity only "
              "(world-readable), and Nimbus gives each topology an identity of its own "
              "(docs/security.md). Keep it in a file only the cluster's user can read.",
              Text()),
    ConfigKey("storm.zookeeper.topology.auth.scheme", "digest",
              "Auth scheme of a topology's own ZooKeeper identity (Storm's key).",
              Choice(("digest",))),
    ConfigKey("storm.zookeeper.topology.auth.payload", None,
              "A topology's ZooKeeper identity (digest: user:password); its workers authenticate "
              "with it. Nimbus generates one at submit when storm.zookeeper.auth.payload is set.",
              Text()),
    ConfigKey("storm.zookeeper.auth.digest.id", None,
              "Set in a secured topology's worker config (not by users): the daemons' public "
              "digest ACL id, given to the nodes workers create so the daemons can remove them.",
              Text()),
    ConfigKey("storm.messaging.curve.enabled", False,
              "Encrypt and authenticate worker links with CurveZMQ: Nimbus makes a key pair per "
              "topology at submit, only that topology's workers hold it (docs/security.md). Off by "
              "default, like Storm's plain Netty links.",
              Flag()),
    ConfigKey("topology.messaging.curve.public.key", None,
              "Set by Nimbus (not by users): the topology's CURVE public key (Z85).",
              Text()),
    ConfigKey("topology.messaging.curve.secret.key", None,
              "Set by Nimbus (not by users): the topology's CURVE secret key (Z85).",
              Text()),
    ConfigKey("storm.local.hostname", None,
              "The host name a daemon gives others to reach it when it binds every interface "
              "(unset: this machine's host name, as Storm's InetAddress.getLocalHost).",
              Text()),
    ConfigKey("storm.local.dir", "stormpy-local", "Directory for daemon state (bundles, pids, logs).",
              Text()),
    ConfigKey("storm.log.dir", None, "Directory for daemon logs; defaults to <storm.local.dir>/logs.",
              Text()),
)
