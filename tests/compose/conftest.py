"""Fixtures of the docker-compose tests (see compose_kit)."""

from compose_kit import compose_cluster  # noqa: F401 - the session's compose cluster
