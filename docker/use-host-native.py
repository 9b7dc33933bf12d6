"""Install the compiled tuple path that the host built (``make``'s in-place mypyc build) into this
image's stormpy, when it fits; exit 0 when the compiled modules are then in use, 1 otherwise.

Contract: ``use-host-native.py DIR`` reads what docker/stage-build.sh staged in DIR: ``PLATFORM``
(the host's ``sysconfig`` platform and SOABI) and ``site/`` (the extension files, laid out as in
site-packages). When ``PLATFORM`` is this interpreter's, the files are copied into site-packages
and a fresh interpreter must import every module of ``stormpy._native.COMPILED_MODULES`` from
them; when anything is missing, differs or fails to load, every copied file is removed again and
the exit status is 1 (the Dockerfile then compiles with mypyc), saying why on stderr."""

from __future__ import annotations

import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

CHECK = ("import importlib, stormpy._native as n; assert n.COMPILED, n.PURE_REASON; "
         "[importlib.import_module(m) for m in n.COMPILED_MODULES]; "
         "assert all(importlib.import_module(m).__file__.endswith(('.so', '.pyd')) "
         "for m in n.COMPILED_MODULES), 'a module loaded from its source'")


def platform_tag() -> str:
    return f"{sysconfig.get_platform()} {sysconfig.get_config_var('SOABI')}"


def main(staged: Path) -> int:
    site = Path(sysconfig.get_paths()["platlib"])
    files = sorted(p for p in (staged / "site").rglob("*") if p.is_file()) \
        if (staged / "site").is_dir() else []
    tag_file = staged / "PLATFORM"
    host_tag = tag_file.read_text().strip() if tag_file.is_file() else ""
    if not files:
        print("no compiled tuple path staged by the host", file=sys.stderr)
        return 1
    if host_tag != platform_tag():
        print(f"the host's compiled tuple path is for {host_tag!r}, this image is "
              f"{platform_tag()!r}", file=sys.stderr)
        return 1
    copied = []
    for source in files:
        target = site / source.relative_to(staged / "site")
        if not target.parent.is_dir():
            print(f"{target.parent} is not a package directory of this image", file=sys.stderr)
            break
        shutil.copy2(source, target)
        copied.append(target)
    else:
        check = subprocess.run([sys.executable, "-c", CHECK], capture_output=True, text=True)
        if check.returncode == 0:
            print(f"using the host's compiled tuple path ({len(copied)} files)", file=sys.stderr)
            return 0
        print(f"the host's compiled tuple path does not load here:\n{check.stderr[-2000:]}",
              file=sys.stderr)
    for target in copied:
        target.unlink()
    return 1


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1])))
