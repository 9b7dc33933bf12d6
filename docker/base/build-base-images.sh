#!/bin/sh
# Contract: make sure the base images the Dockerfiles build FROM exist in the local Docker daemon.
#   - The public images (python:3.11-slim for stormpy, zookeeper:3.8 for ZooKeeper) are used when
#     they are present or can be pulled: nothing is built.
#   - Otherwise (no image registry reachable) one local base image, stormpy-base:bookworm, is built
#     from Debian packages: `debootstrap --variant=minbase bookworm` with Python 3.11 and its
#     headers (the mypyc build), gcc, a JRE (Spark), Apache ZooKeeper's jars (Debian's libzookeeper-java), procps
#     and this machine's CA certificates (pip inside the image build trusts what the host trusts),
#     then `docker import`. An existing stormpy-base:bookworm is reused.
# Prints the two base images to use as shell assignments, read by the Makefile and the tests:
#   STORMPY_BASE_IMAGE=...  ZOOKEEPER_BASE_IMAGE=...
# Needs root (debootstrap) and a running Docker daemon. DEBIAN_MIRROR overrides the mirror. The
# packages debootstrap downloads are kept in DEBOOTSTRAP_CACHE (default /var/cache/stormpy-debootstrap)
# for the next build of the base image on this machine.
set -eu
PUBLIC_PY=${STORMPY_PUBLIC_BASE_IMAGE:-python:3.11-slim}
PUBLIC_ZK=${ZOOKEEPER_PUBLIC_BASE_IMAGE:-zookeeper:3.8}
LOCAL=${STORMPY_LOCAL_BASE_IMAGE:-stormpy-base:bookworm}
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
CACHE=${DEBOOTSTRAP_CACHE:-/var/cache/stormpy-debootstrap}

have() { docker image inspect "$1" >/dev/null 2>&1; }
pull() { have "$1" || docker pull -q "$1" >/dev/null 2>&1; }

if pull "$PUBLIC_PY" && pull "$PUBLIC_ZK"; then
  echo "STORMPY_BASE_IMAGE=$PUBLIC_PY ZOOKEEPER_BASE_IMAGE=$PUBLIC_ZK"
  exit 0
fi
if ! have "$LOCAL"; then
  echo "no image registry reachable: building $LOCAL from Debian packages (debootstrap)" >&2
  command -v debootstrap >/dev/null 2>&1 || {
    apt-get update -q >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -q debootstrap >&2; }
  root=$(mktemp -d /var/tmp/stormpy-base.XXXXXX)
  trap 'rm -rf "$root"' EXIT
  mkdir -p "$CACHE"
  # ZooKeeper's jars (libzookeeper-java), not Debian's zookeeper package: that one depends on the
  # full default-jre (GTK, Mesa, LLVM: a third of the packages and of the build's time).
  # Two stages, the second with dpkg's force-unsafe-io (no fsync per file: this is a throw-away
  # tree, imported whole): most of the time goes into dpkg installing ~200 packages.
  debootstrap --foreign --variant=minbase --cache-dir="$CACHE" \
    --include=python3.11,python3.11-dev,python3.11-venv,python3-distutils,python3-pip-whl,python3-setuptools-whl,gcc,libc6-dev,openjdk-17-jre-headless,libzookeeper-java,procps,ca-certificates \
    bookworm "$root" "$MIRROR" >&2
  mkdir -p "$root/etc/dpkg/dpkg.cfg.d"
  echo force-unsafe-io > "$root/etc/dpkg/dpkg.cfg.d/stormpy-unsafe-io"
  chroot "$root" /debootstrap/debootstrap --second-stage >&2
  rm -f "$root/etc/dpkg/dpkg.cfg.d/stormpy-unsafe-io"
  # this machine's extra CA certificates (an egress proxy's, say), so pip works inside builds
  if [ -d /usr/local/share/ca-certificates ]; then
    cp -r /usr/local/share/ca-certificates/. "$root/usr/local/share/ca-certificates/"
    chroot "$root" update-ca-certificates >&2
  fi
  printf 'deb %s bookworm main\n' "$MIRROR" > "$root/etc/apt/sources.list"
  chroot "$root" apt-get clean
  rm -rf "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/*.bin "$root"/proc/* "$root"/sys/* "$root"/dev/* 2>/dev/null || true
  tar -C "$root" -c . | docker import \
    -c 'ENV LANG=C.UTF-8 PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    -c 'CMD ["/bin/bash"]' - "$LOCAL" >&2
fi
echo "STORMPY_BASE_IMAGE=$LOCAL ZOOKEEPER_BASE_IMAGE=$LOCAL"
