#!/bin/sh
# Contract: leave a Docker daemon answering and docker-compose on PATH, or exit non-zero saying
# what is missing. Installs Debian's docker.io and docker-compose (v1; Debian has no compose v2
# plugin) when they are missing, and starts dockerd with its defaults (log: /var/log/dockerd.log)
# when no daemon answers. Needs root (or sudo) for what it installs or starts.
set -eu
SUDO=$( [ "$(id -u)" = 0 ] || echo sudo )
if ! command -v dockerd >/dev/null 2>&1 && [ ! -x /usr/sbin/dockerd ] || ! command -v docker-compose >/dev/null 2>&1; then
  echo "installing Docker (Debian packages docker.io, docker-compose)"
  $SUDO apt-get update -q && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q docker.io docker-compose
fi
if ! docker info >/dev/null 2>&1; then
  echo "starting dockerd (log: /var/log/dockerd.log)"
  DOCKERD=$(command -v dockerd || echo /usr/sbin/dockerd)
  $SUDO sh -c "setsid nohup $DOCKERD >>/var/log/dockerd.log 2>&1 &"
  i=0
  until docker info >/dev/null 2>&1; do
    i=$((i + 1))
    [ $i -le 120 ] || { echo "dockerd did not answer within 60 s; see /var/log/dockerd.log"; exit 1; }
    sleep 0.5
  done
fi
