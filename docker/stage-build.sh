#!/bin/sh
# Contract: `stage-build.sh PYTHON DIR` stages in DIR (.build/docker, inside the image's build
# context) what this host can give the stormpy image's build so that it downloads and compiles
# nothing this host already has, when the host fits the image (Linux on Docker's architecture,
# CPython 3.11: the base images are Debian bookworm's or python:3.11-slim, both glibc 2.36):
#   DIR/wheels: wheels of the image's requirements (docker/image-requirements.py) at exactly the
#     versions PYTHON's environment has (`pip freeze` as constraints), made by `pip wheel` from
#     pip's cache (PySpark's wheel, built from its sdist once, included); redone only when the
#     requirements or those versions change;
#   DIR/native: the tuple path as `make` compiled it in place (src/**/*.so), when every module of
#     stormpy._native.COMPILED_MODULES has an extension newer than its source, with PLATFORM
#     (sysconfig platform and SOABI) for docker/use-host-native.py to check in the image.
# Anything that does not fit is left out (the Dockerfile then downloads or compiles it): never
# an error, except a failing `pip wheel` on a host that fits.
set -eu
PY=$1
mkdir -p "$2"
DIR=$(cd "$2" && pwd)
arch=$(docker info --format '{{.OSType}}-{{.Architecture}}' 2>/dev/null || echo unknown)
host=$("$PY" -c 'import platform, sys, sysconfig; print(sysconfig.get_platform() if sys.version_info[:2] == (3, 11) and platform.python_implementation() == "CPython" else "")')
if [ "$host" != "$arch" ]; then
  echo "this host ($host, Python $("$PY" -c 'import sys; print(sys.version.split()[0])')) does not fit the image ($arch, CPython 3.11): the image build downloads and compiles" >&2
  rm -rf "$DIR/wheels" "$DIR/native"
  exit 0
fi

wanted=$(mktemp)
trap 'rm -f "$wanted"' EXIT
{ "$PY" docker/image-requirements.py pyproject.toml; echo ---; "$PY" -m pip freeze --exclude-editable | grep -v " @ "; } > "$wanted"
if [ -f "$DIR/wheels/.staged" ] && cmp -s "$wanted" "$DIR/wheels/.staged"; then
  echo "wheels for the image: staged already ($DIR/wheels)" >&2
else
  echo "wheels for the image: pip wheel from this host's pip cache into $DIR/wheels" >&2
  rm -rf "$DIR/wheels"
  mkdir -p "$DIR/wheels"
  sed '/^---$/,$d' "$wanted" > "$DIR/wheels/.requirements"
  sed '1,/^---$/d' "$wanted" > "$DIR/wheels/.constraints"
  "$PY" -m pip wheel -q --wheel-dir "$DIR/wheels" -r "$DIR/wheels/.requirements" \
      -c "$DIR/wheels/.constraints" >&2
  cp "$wanted" "$DIR/wheels/.staged"
fi

rm -rf "$DIR/native"
if (cd src && STORMPY_PURE= "$PY" -c 'import sys; import stormpy._native as n; sys.exit(0 if n.COMPILED else 1)') 2>/dev/null; then
  mkdir -p "$DIR/native/site"
  (cd src && find . -name '*.so' -exec cp --parents -p {} "$DIR/native/site/" \;)
  "$PY" -c 'import sysconfig; print(sysconfig.get_platform(), sysconfig.get_config_var("SOABI"))' \
      > "$DIR/native/PLATFORM"
  echo "compiled tuple path for the image: this host's in-place build ($DIR/native)" >&2
else
  echo "no current in-place build of the tuple path here: the image build compiles it" >&2
fi
