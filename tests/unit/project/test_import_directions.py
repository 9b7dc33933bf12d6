"""Pins the import directions (docs/architecture.md, "Packages and import directions"):
topology ← acker/worker/connectors ← nimbus/supervisor/local ← cli; shared services never import
daemons (``client``, the client side of the Nimbus protocol, is one: daemons, local mode, the UI
and the CLI reach Nimbus through it; ``scheduler``, the pure scheduler, is another); the worker
never imports nimbus or supervisor; connectors never import worker internals; production code
never imports the test kit (``stormpy.testing``); ``host`` (process plumbing: daemon base,
psutil, Java) sits below every other package and imports none of them; and no two modules import
each other, directly or through others, not even under ``TYPE_CHECKING``."""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

SRC = Path(__file__).resolve().parents[3] / "src" / "stormpy"
SERVICES = {"config", "messaging", "cluster", "rpc", "bundle", "host"}

ALLOWED: dict[str, set[str]] = {
    "topology": {"topology"},
    "batching": {"topology", "batching"},
    "acker": {"topology", "acker"},
    # state: the one state layer (memory, SQLite, ZooKeeper backends) behind context.state_store
    # client/rpc: a cluster worker reads its topology's earlier heartbeats from the leader
    "worker": {"topology", "acker", "worker", "messaging", "config", "cluster", "bundle", "host",
               "state", "client", "rpc"},
    # trident: the Kafka sink's Trident state (connectors build on Trident's public API too)
    "connectors": {"topology", "connectors", "config", "settings", "cluster", "batching", "host",
                   "transactional", "state", "trident"},
    "host": {"host"},
    "config": {"config"},
    "settings": {"settings", "config"},  # the checks of settings classes (SettingError's helpers)
    "messaging": {"messaging", "config"},
    "cluster": {"cluster", "config", "topology", "host"},  # topology: the plain-data layout types
    "rpc": {"rpc", "config"},
    "bundle": {"bundle", "config"},
    # the client side of the Nimbus protocol (NimbusClient, seeds, leader discovery, bundle
    # transfer): a shared service that never imports a daemon
    "client": {"client", "topology", "config", "cluster", "rpc", "bundle", "host"},
    # the pure scheduler, shared by Nimbus and local mode
    "scheduler": {"scheduler", "topology"},
    # state: the submit-time warning about where a topology's state lives (state.deployment)
    "nimbus": {"nimbus", "topology", "config", "cluster", "rpc", "bundle", "messaging", "host",
               "client", "scheduler", "state"},
    "supervisor": {"supervisor", "topology", "config", "cluster", "rpc", "bundle", "messaging", "host",
                   "client", "logviewer"},
    # the per-host log server: the log directory, the UI's access rules (ui.security only)
    "logviewer": {"logviewer", "config", "host", "ui"},
    # local mode (LocalCluster in-process, ProcessCluster as subprocesses): production code that
    # runs workers and talks to Nimbus through the client, never through daemon internals
    "local": {"local", "topology", "acker", "worker", "messaging", "config", "cluster", "rpc",
              "bundle", "client", "scheduler", "host", "state"},
    "testing": {"testing", "local", "topology", "acker", "worker", "messaging", "config", "cluster",
                "rpc", "bundle", "client", "scheduler", "nimbus", "supervisor", "connectors", "host",
                "state"},
    "cli": {"cli", "local", "topology", "acker", "worker", "messaging", "config", "cluster", "rpc",
            "bundle", "client", "nimbus", "supervisor", "connectors", "host", "ui", "logviewer"},
    # the UI reads Nimbus through the client (as the CLI does) and heartbeats through cluster; it
    # never imports daemon internals
    "ui": {"ui", "topology", "config", "cluster", "rpc", "worker", "client", "host"},
    "transactional": {"transactional", "state", "topology", "config", "settings", "cluster",
                      "batching", "host"},
    # windowed and stateful bolts: built on the public topology API like transactional
    "windowing": {"windowing", "state", "topology", "config", "settings", "cluster", "batching",
                  "host"},
    "state": {"state", "topology", "config", "settings", "cluster", "batching", "host"},
    # Trident: stream operations on the transactional layer and the state layer only
    "trident": {"trident", "transactional", "state", "topology", "config", "settings", "cluster",
                "batching", "host"},
    # Storm's multilang protocol and pystorm components: the topology API and its seams only
    "multilang": {"multilang", "topology", "config", "settings", "host"},
    "_native": set(),  # picks compiled or source modules: the standard library only
    "_public": set(),  # gives exported names their public package: the standard library only
}
# every public package (and stormpy.config) calls stormpy._public.publish at its end
for _package in ("topology", "testing", "local", "state", "windowing", "transactional", "trident",
                 "multilang", "connectors", "client", "config"):
    ALLOWED[_package].add("_public")

#: Import cycles known to be removed by work being merged, each as the set of the cycle's modules.
#: Keep this empty: an entry here is a debt with a name on it.
KNOWN_CYCLES: list[frozenset[str]] = []


def module_name(path: Path) -> str:
    """``stormpy.worker.loop`` for src/stormpy/worker/loop.py (packages by their ``__init__``)."""
    parts = list(path.relative_to(SRC.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def all_modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(SRC.rglob("*.py"))}


def _resolve_relative(module: str, path: Path, level: int, target: str | None) -> str:
    """The absolute name ``from <level dots><target> import ...`` means inside ``module``."""
    package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    base = package[:len(package) - (level - 1)] if level > 1 else package
    return ".".join([*base, target] if target else base)


@cache
def known_modules() -> frozenset[str]:
    return frozenset(all_modules())


@cache
def imported_modules(path: Path) -> frozenset[str]:
    """Every ``stormpy...`` module this file imports, anywhere in it (function bodies and
    ``TYPE_CHECKING`` blocks included), relative imports resolved. ``from pkg import name`` is an
    import of ``pkg.name`` when that is a module, else of ``pkg``."""
    tree = ast.parse(path.read_text(), str(path))
    me = module_name(path)
    modules = known_modules()
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = (_resolve_relative(me, path, node.level, node.module) if node.level
                    else node.module or "")
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                out.add(sub if sub in modules else base)
    return frozenset(n for n in out if n == "stormpy" or n.startswith("stormpy."))


def package_key(name: str) -> str:
    """The key of ``ALLOWED`` for a top-level name: an internal top-level module (``_batching``)
    counts as its public-looking name (``batching``) unless it has a key of its own (``_native``)."""
    internal = name.startswith("_") and not name.startswith("__")
    return name[1:] if internal and name not in ALLOWED else name


def stormpy_imports(path: Path) -> set[str]:
    """The top-level stormpy packages (``worker``, ``config``, ...) this file imports."""
    return {package_key(n.split(".")[1]) for n in imported_modules(path) if "." in n}


def package_of(path: Path) -> str:
    rel = path.relative_to(SRC)
    return package_key(rel.parts[0] if len(rel.parts) > 1 else rel.stem)


def module_graph() -> dict[str, set[str]]:
    """module → the stormpy modules it imports (an import of a package is an edge to its
    ``__init__``; names that are no module are dropped)."""
    modules = all_modules()
    return {name: {m for m in imported_modules(path) if m in modules and m != name}
            for name, path in modules.items()}


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every strongly connected group of modules larger than one (Tarjan), each reported as one
    concrete cycle ``a → b → ... → a``."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[set[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = set()
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.add(w)
                if w == v:
                    break
            if len(group) > 1:
                groups.append(group)

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return [_one_cycle(graph, group) for group in groups]


def _one_cycle(graph: dict[str, set[str]], group: set[str]) -> list[str]:
    """A shortest cycle through the smallest module of ``group`` (breadth-first inside it)."""
    start = min(group)
    parents: dict[str, str] = {}
    frontier = [start]
    while frontier:
        nxt = []
        for v in frontier:
            for w in sorted(graph[v] & group):
                if w == start:
                    path = [v]
                    while path[-1] != start:
                        path.append(parents[path[-1]])
                    return [*reversed(path), start]
                if w not in parents:
                    parents[w] = v
                    nxt.append(w)
        frontier = nxt
    raise AssertionError(f"no cycle through {start} in {sorted(group)}")


def test_every_module_respects_the_import_directions() -> None:
    violations = []
    for path in sorted(SRC.rglob("*.py")):
        pkg = package_of(path)
        if pkg in ("__init__", "__main__"):
            continue
        allowed = ALLOWED.get(pkg)
        assert allowed is not None, f"{path}: package {pkg!r} has no import rule; add one"
        for imported in stormpy_imports(path) - allowed:
            if imported == "__init__":
                continue
            violations.append(f"{path.relative_to(SRC)} imports stormpy.{imported}")
    assert violations == []


def test_production_code_never_imports_the_test_kit() -> None:
    offenders = [str(p.relative_to(SRC)) for p in sorted(SRC.rglob("*.py"))
                 if package_of(p) != "testing" and "testing" in stormpy_imports(p)]
    assert offenders == []


def test_there_are_no_import_cycles_not_even_type_only_ones() -> None:
    cycles = [c for c in import_cycles(module_graph()) if frozenset(c) not in KNOWN_CYCLES]
    assert cycles == [], "import cycles:\n" + "\n".join(" → ".join(c) for c in cycles)


def test_the_cycle_finder_finds_and_names_cycles() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": {"e2"}, "e2": set()}
    assert import_cycles(graph) == [["a", "b", "c", "a"]]
    assert import_cycles({"x": {"y"}, "y": set()}) == []


def test_relative_imports_are_resolved() -> None:
    assert _resolve_relative("stormpy.worker.loop", SRC / "worker" / "loop.py", 1, "tasks") \
        == "stormpy.worker.tasks"
    assert _resolve_relative("stormpy.worker", SRC / "worker" / "__init__.py", 1, "loop") \
        == "stormpy.worker.loop"
    assert _resolve_relative("stormpy.worker.loop", SRC / "worker" / "loop.py", 2, "config") \
        == "stormpy.config"


def test_root_package_re_exports_only_the_topology_api() -> None:
    # _native only picks compiled or source modules for the tuple path; _public names them
    assert stormpy_imports(SRC / "__init__.py") == {"topology", "_native", "_public"}
