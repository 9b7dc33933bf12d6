"""Applying a topology's run-time logger levels inside one worker process.

Contract of :class:`LogLevels`: :meth:`LogLevels.apply` takes the topology's current
:class:`~stormpy.cluster.worker_ops.LogConfig` and the time; every logger named there whose entry
has not expired gets its target level (``ROOT`` is the root logger); the level a logger had before
its first change is remembered, and when its entry expires (timeout passed, or reset) or vanishes
from the document the logger gets the entry's ``reset_log_level``, else that remembered level, back.
Applying the same document twice changes nothing. It returns the loggers whose level changed.
"""

from __future__ import annotations

import logging

from stormpy.cluster.worker_ops import LEVELS, ROOT_LOGGER, LogConfig

__all__ = ["LogLevels"]


def _logger(name: str) -> logging.Logger:
    return logging.getLogger() if name == ROOT_LOGGER else logging.getLogger(name)


class LogLevels:
    """The worker's side of ``set-log-level`` (see the module contract); used by one thread."""

    def __init__(self) -> None:
        self._original: dict[str, int] = {}

    def apply(self, config: LogConfig, now: float) -> list[str]:
        changed = []
        wanted: dict[str, int] = {}
        for name, entry in config.named_logger_level.items():
            if not entry.expired(now):
                wanted[name] = LEVELS[entry.target_level]
            elif name in self._original:
                reset = entry.reset_log_level
                wanted[name] = LEVELS[reset] if reset else self._original[name]
        for name in list(self._original):
            if name not in config.named_logger_level:
                wanted[name] = self._original[name]
        for name, level in wanted.items():
            logger = _logger(name)
            if name not in self._original:
                self._original[name] = logger.level
            if logger.level != level:
                logger.setLevel(level)
                changed.append(name)
            current = config.named_logger_level.get(name)
            if current is None or current.expired(now):
                del self._original[name]
        return changed
