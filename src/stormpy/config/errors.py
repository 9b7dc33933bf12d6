"""The configuration errors: :class:`ConfigError` (a file, an override or a section is malformed)
and :class:`SettingError` (one setting is wrong; the one error of every settings check).

Contract: a :class:`SettingError`'s message starts with the setting's name, then says what was
expected and what was given, so an ``error:`` line shown alone says what to change.
"""

from __future__ import annotations

__all__ = ["ConfigError", "SettingError"]


class ConfigError(ValueError):
    """A configuration file or value is malformed; the message names the key or file."""


class SettingError(ConfigError):
    """One setting of a topology, a connector or a feature is missing or invalid.

    The one error base of every settings check (core keys, Kafka, Kinesis, windowing, state,
    transactional, Spark): ``setting`` is the name users wrote (``topology.message.timeout.secs``,
    ``KafkaSpoutConfig.topics``), and the message always starts with it, so an error shown alone
    still says what to change.
    """

    def __init__(self, setting: str, problem: str) -> None:
        self.setting = setting
        self.problem = problem
        super().__init__(f"{setting}: {problem}")

    def __reduce__(self) -> tuple[type[SettingError], tuple[str, str]]:
        return type(self), (self.setting, self.problem)
