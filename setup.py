"""Build hook: compiles the tuple path with mypyc when it can (everything else is pyproject.toml).

The modules listed in ``stormpy._native.COMPILED_MODULES`` are plain, type-checked Python. With a
C compiler and the Python headers they are compiled to C extensions, which Python imports instead
of the sources (same behaviour, 1.3–1.6x faster on the tuple path). Without them the package
installs as pure Python.

``STORMPY_MYPYC`` (at build/install time):
- ``0``: pure Python, nothing compiled;
- ``1``: compile, and fail the install if that fails;
- unset (default): compile, and fall back to pure Python, with a warning, if that fails.
"""

from __future__ import annotations

import ast
import os
import sys

from setuptools import setup
from setuptools.command.build_ext import build_ext

MODE = os.environ.get("STORMPY_MYPYC", "auto").strip().lower()
REQUIRED = MODE in ("1", "true", "yes", "required")
HERE = os.path.dirname(os.path.abspath(__file__))


def compiled_modules() -> list[str]:
    """``COMPILED_MODULES`` of src/stormpy/_native.py, read without running that module."""
    with open(os.path.join(HERE, "src", "stormpy", "_native.py")) as f:
        tree = ast.parse(f.read())
    for node in tree.body:
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) \
                and node.target.id == "COMPILED_MODULES" and node.value is not None:
            return list(ast.literal_eval(node.value))
    raise RuntimeError("src/stormpy/_native.py defines no COMPILED_MODULES")


class OptionalBuildExt(build_ext):
    """build_ext that, unless compilation is required, installs pure Python when any extension
    fails to build (a partial set is never kept: compiled modules call each other natively)."""

    def run(self) -> None:
        try:
            super().run()
        except Exception as exc:  # noqa: BLE001 - no compiler, no headers, ...
            if REQUIRED:
                raise
            print(f"warning: stormpy: compiling the tuple path failed ({exc}); "
                  "installing pure Python", file=sys.stderr)
            for path in self.get_outputs():
                if os.path.exists(path):
                    os.remove(path)
            self.extensions = []


def ext_modules() -> list:
    """The mypyc extensions, or none (pure Python)."""
    if MODE in ("0", "false", "no", "off"):
        return []
    try:
        from mypyc.build import mypycify
    except ImportError:
        if REQUIRED:
            raise
        print("warning: stormpy: mypyc is not available; installing pure Python", file=sys.stderr)
        return []
    paths = [os.path.join("src", *m.split(".")) + ".py" for m in compiled_modules()]
    try:
        return mypycify(paths, opt_level="3", group_name="stormpy_native")
    except BaseException as exc:  # noqa: BLE001 - mypyc reports type errors with SystemExit
        if REQUIRED:
            raise
        print(f"warning: stormpy: mypyc cannot compile the tuple path ({exc!r}); "
              "installing pure Python", file=sys.stderr)
        return []


setup(ext_modules=ext_modules(), cmdclass={"build_ext": OptionalBuildExt})
