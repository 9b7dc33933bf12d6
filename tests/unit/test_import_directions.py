"""Pins the import directions of DESIGN.md §1: topology ← acker/worker/connectors ←
nimbus/supervisor ← cli; shared services never import daemons; the worker never imports nimbus or
supervisor; connectors never import worker internals."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src" / "stormpy"
SERVICES = {"config", "messaging", "cluster", "rpc", "bundle"}

ALLOWED: dict[str, set[str]] = {
    "topology": {"topology"},
    "acker": {"topology", "acker"},
    "worker": {"topology", "acker", "worker", "messaging", "config", "cluster", "bundle"},
    "connectors": {"topology", "connectors", "config", "cluster", "transactional"},
    "config": {"config"},
    "messaging": {"messaging", "config"},
    "cluster": {"cluster", "config"},
    "rpc": {"rpc", "config"},
    "bundle": {"bundle", "config"},
    "nimbus": {"nimbus", "topology", "config", "cluster", "rpc", "bundle", "messaging"},
    "supervisor": {"supervisor", "topology", "config", "cluster", "rpc", "bundle", "messaging"},
    "testing": {"testing", "topology", "acker", "worker", "messaging", "config", "cluster", "rpc",
                "bundle", "nimbus", "supervisor", "connectors"},
    "transactional": {"transactional", "topology", "config", "cluster"},
    "ui": {"ui", "topology", "config", "cluster", "rpc", "worker"},
    "_native": set(),  # picks compiled or source modules: the standard library only
}


def stormpy_imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), str(path))
    out: set[str] = set()
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module]
        for name in names:
            parts = name.split(".")
            if parts[0] == "stormpy" and len(parts) > 1:
                out.add(parts[1])
    return out


def package_of(path: Path) -> str:
    rel = path.relative_to(SRC)
    return rel.parts[0] if len(rel.parts) > 1 else rel.stem


def test_every_module_respects_the_import_directions() -> None:
    violations = []
    for path in sorted(SRC.rglob("*.py")):
        pkg = package_of(path)
        if pkg in ("cli", "__init__", "__main__"):
            continue
        allowed = ALLOWED.get(pkg)
        assert allowed is not None, f"{path}: package {pkg!r} has no import rule; add one"
        for imported in stormpy_imports(path) - allowed:
            if imported == "__init__":
                continue
            violations.append(f"{path.relative_to(SRC)} imports stormpy.{imported}")
    assert violations == []


def test_root_package_re_exports_only_the_topology_api() -> None:
    assert stormpy_imports(SRC / "__init__.py") == {"topology"}
