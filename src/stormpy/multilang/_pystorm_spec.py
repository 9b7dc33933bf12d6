"""Naming a pystorm (or streamparse) component in a topology::

    builder.set_spout("sentences", pystorm_component(SentenceSpout))          # in-process
    builder.set_bolt("split", pystorm_component(SplitBolt, shell=True,
                                                serializer="msgpack"), 4)      # a subprocess

``pystorm_component(cls, outputs=None, shell=False, serializer=None, tick_secs=None)`` returns a
handle ``TopologyBuilder.set_spout``/``set_bolt`` take like a class. ``cls`` is a pystorm
``Spout``/``Bolt`` subclass (``BatchingBolt``, ``TicklessBatchingBolt``, ``ReliableSpout`` and
streamparse's ``Spout``/``Bolt`` are); it must be importable from a module (its path is what
the topology carries). ``outputs`` defaults to the class's ``outputs`` (streamparse's
declaration: field names or ``Stream`` objects); none at all is refused.

In-process (the default) the component runs in the task through
:mod:`stormpy.multilang._pystorm_adapter`; with ``shell=True`` each task runs
``python -m stormpy.multilang.pystorm_run module:Class`` under a ``ShellBolt``/``ShellSpout``, the
way Storm runs it, with ``serializer`` (``json`` or ``msgpack``) for that component, else the
topology's ``topology.multilang.serializer``. ``tick_secs`` sets the component's tick frequency
(a ``BatchingBolt`` counts ``ticks_between_batches`` of them); a ``TicklessBatchingBolt``
in-process gets its ``secs_between_batches`` by default.
"""

from __future__ import annotations

from typing import Any

from stormpy.multilang._pystorm_adapter import PystormBolt, PystormSpout, require_pystorm
from stormpy.multilang._shell import outputs_as_doc, outputs_doc, python_command
from stormpy.multilang._shell_bolt import ShellBolt
from stormpy.multilang._shell_spout import ShellSpout
from stormpy.topology._imports import class_path, is_local_path
from stormpy.topology._streams import normalize_outputs

__all__ = ["PystormComponent", "pystorm_component"]

RUNNER = "stormpy.multilang.pystorm_run"


class PystormComponent:
    """The handle :func:`pystorm_component` returns (``component_class``/``component_kwargs``)."""

    def __init__(self, cls: type, outputs: Any = None, shell: bool = False,
                 serializer: str | None = None, tick_secs: float | None = None) -> None:
        pystorm = require_pystorm()
        if not isinstance(cls, type) or not issubclass(cls, (pystorm.Bolt, pystorm.Spout)):
            raise TypeError(f"{cls!r} is not a pystorm Bolt or Spout subclass")
        self.spout = issubclass(cls, pystorm.Spout)
        self.path = class_path(cls)
        if shell and (is_local_path(self.path) or self.path.startswith("__main__:")):
            raise ValueError(f"{cls.__qualname__} is defined inside a function or in __main__: "
                             "a subprocess cannot import it (move it to an importable module)")
        declared = outputs if outputs is not None else getattr(cls, "outputs", None)
        if declared is None:
            raise ValueError(f"{cls.__qualname__} declares no outputs: pass "
                             "pystorm_component(cls, outputs=[...]) ({} for none)")
        # a bad declaration is named after the user's class, not the component running it
        self.outputs = outputs_as_doc(normalize_outputs(outputs_doc(declared, cls.__qualname__),
                                                        cls.__qualname__))
        self.shell = shell
        self.serializer = serializer
        if tick_secs is None and not shell and issubclass(cls, pystorm.TicklessBatchingBolt):
            tick_secs = getattr(cls, "secs_between_batches", None)
        self.tick_secs = tick_secs

    @property
    def component_class(self) -> type:
        if self.shell:
            return ShellSpout if self.spout else ShellBolt
        return PystormSpout if self.spout else PystormBolt

    @property
    def component_kwargs(self) -> dict[str, Any]:
        if self.shell:
            kw: dict[str, Any] = {"command": python_command(RUNNER, self.path),
                                  "outputs": self.outputs}
            if self.serializer is not None:
                kw["serializer"] = self.serializer
            return kw
        out: dict[str, Any] = {"component": self.path, "outputs": self.outputs}
        if self.tick_secs and not self.spout:
            out["tick_secs"] = self.tick_secs
        return out


def pystorm_component(cls: type, outputs: Any = None, *, shell: bool = False,
                      serializer: str | None = None,
                      tick_secs: float | None = None) -> PystormComponent:
    """A pystorm component for ``set_spout``/``set_bolt`` (see the module doc)."""
    return PystormComponent(cls, outputs, shell, serializer, tick_secs)
