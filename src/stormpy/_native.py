"""Which modules of the tuple path may be compiled (mypyc), and whether the compiled ones are used.

The modules in ``COMPILED_MODULES`` are plain, type-checked Python. An install with a C compiler
(``pip install .``, ``make``) also compiles them to C extensions (see ``setup.py``); Python then
imports the extension instead of the ``.py`` file. Behaviour is the same either way; only speed
differs.

The compiled set is used all or nothing (compiled modules call each other natively, so a mix of
compiled and source versions would hold two different ``Tuple`` classes). The sources are used
instead when:

- ``STORMPY_PURE=1`` is set (to profile or debug the tuple path in Python), or
- an extension is missing, or older than its source (an edited checkout that was not rebuilt:
  ``make`` rebuilds).

This module is imported first by the package and must itself never be compiled. It only uses the
standard library (``setup.py`` reads ``COMPILED_MODULES`` from it).
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import os
import sys
import warnings
from collections.abc import Sequence
from importlib.machinery import ModuleSpec
from types import ModuleType

#: the tuple path: per-tuple code of the executor loop, collectors, routers, acker ledger
COMPILED_MODULES: tuple[str, ...] = (
    "stormpy.topology._tuple",
    "stormpy.topology._columns",
    "stormpy.worker.routing",
    "stormpy.worker.stats",
    "stormpy.worker.values",
    "stormpy.worker.dispatch",
    "stormpy.worker.edges",
    "stormpy.worker.emit_checks",
    "stormpy.worker.sampling",
    "stormpy.worker.tasks",
    "stormpy.worker.bolt_task",
    "stormpy.worker.spout_roots",
    "stormpy.worker.spout_task",
    "stormpy.worker.column_anchors",
    "stormpy.worker.column_emit",
    "stormpy.worker.column_path",
    "stormpy.worker.spout_batch",
    "stormpy.worker.transfer",
    "stormpy.worker.task_timers",
    "stormpy.worker.inbound",
    "stormpy.worker.loop",
    "stormpy.acker.ledger",
    "stormpy.acker.core",
    "stormpy.acker.rotating",
)

#: the directory holding the ``stormpy`` package
_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
#: an editable install (built in place) goes stale when sources are edited; an installed package
#: (site-packages) is written whole, so its files' times say nothing
_IN_CHECKOUT = os.path.basename(_ROOT) == "src"


def module_files(module: str, root: str = _ROOT) -> tuple[str, list[str]]:
    """The module's source file under ``root`` and the compiled extensions found beside it."""
    base = os.path.join(root, *module.split("."))
    exts = [base + suffix for suffix in importlib.machinery.EXTENSION_SUFFIXES
            if os.path.exists(base + suffix)]
    return base + ".py", exts


def compiled_state(modules: Sequence[str] = COMPILED_MODULES, root: str = _ROOT, *,
                   pure_env: str | None = None, check_times: bool = _IN_CHECKOUT) -> tuple[bool, str]:
    """(use the compiled modules?, why not when not). ``pure_env`` is the value of
    ``STORMPY_PURE`` (read from the environment when None)."""
    if pure_env is None:
        pure_env = os.environ.get("STORMPY_PURE", "")
    if pure_env.strip().lower() in ("1", "true", "yes"):
        return False, "STORMPY_PURE is set"
    for module in modules:
        source, exts = module_files(module, root)
        if not exts:
            return False, f"{module} is not compiled"
        if check_times and os.path.exists(source) and \
                os.path.getmtime(source) > min(map(os.path.getmtime, exts)):
            return False, f"{module}: its compiled extension is older than {source} (run make)"
    return True, ""


class _SourceFinder:
    """Loads the listed modules from their ``.py`` files even where an extension sits beside.

    A meta path finder by protocol (``find_spec``), not by subclassing ``importlib.abc``: that
    module pulls in ``importlib.resources``, ``tempfile``, ``shutil``, ``bz2``, ``lzma`` (~2 MB
    in every process, workers included) for nothing here."""

    def find_spec(self, fullname: str, path: Sequence[str] | None = None,
                  target: ModuleType | None = None) -> ModuleSpec | None:
        if fullname not in COMPILED_MODULES:
            return None
        source, _ = module_files(fullname)
        if not os.path.exists(source):
            return None
        return importlib.util.spec_from_file_location(fullname, source)


def _select() -> tuple[bool, str]:
    compiled, why = compiled_state()
    if compiled:
        return True, ""
    if any(module_files(m)[1] for m in COMPILED_MODULES):  # some extension exists: keep it out
        sys.meta_path.insert(0, _SourceFinder())
        if why.startswith("stormpy."):
            warnings.warn(f"stormpy: using the pure-Python tuple path: {why}", stacklevel=3)
    return False, why


#: True when the tuple path runs compiled; ``PURE_REASON`` says why not otherwise.
COMPILED, PURE_REASON = _select()
