"""Windowed bolts shared by the windowing and Nimbus tests."""

from __future__ import annotations

from stormpy.windowing import Window, WindowedBolt


class Collect(WindowedBolt):
    """Emits each window's first values with the window's start and end timestamps."""

    outputs = ["values", "start", "end"]

    def execute(self, window: Window) -> None:
        self.emit([[t.values[0] for t in window.get()], window.start_timestamp,
                   window.end_timestamp])
