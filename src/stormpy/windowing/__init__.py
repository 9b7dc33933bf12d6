"""Windowed bolts (Storm 2.x's ``BaseWindowedBolt``): sliding and tumbling windows by count or
duration, in processing time or event time with watermarks, lag and late tuples; and stateful
windowed bolts (``BaseStatefulWindowedBolt``), whose window can be persisted in the state backend
(``with_persistence()``). See docs/windowing-state.md.

Built on the public topology API: ``SomeWindowedBolt.with_window(...)`` is passed to
``TopologyBuilder.set_bolt`` and runs as an executor wrapping the user's bolt (internal:
``stormpy.windowing._bolt.WindowedBoltExecutor``).

``JoinBolt`` (Storm's ``org.apache.storm.bolt.JoinBolt``) joins streams by key over such a window
(:mod:`stormpy.windowing._join`), ``IntervalJoinBolt`` two keyed streams by event-time interval
(:mod:`stormpy.windowing._interval_join`); docs/joins.md.
"""

from stormpy._public import publish
from stormpy.windowing._bolt import LATE_FIELDS, WindowedBolt, WindowedBoltSpec
from stormpy.windowing._config import Count, Duration, WindowConfig, WindowConfigError
from stormpy.windowing._interval_join import IntervalJoinBolt
from stormpy.windowing._join import JoinBolt
from stormpy.windowing._manager import Window, WindowManager
from stormpy.windowing._stateful import StatefulWindowedBolt, StatefulWindowedBoltSpec

__all__ = ["LATE_FIELDS", "Count", "Duration", "IntervalJoinBolt", "JoinBolt",
           "StatefulWindowedBolt", "StatefulWindowedBoltSpec", "Window", "WindowConfig",
           "WindowConfigError", "WindowManager", "WindowedBolt", "WindowedBoltSpec"]

publish(__name__, globals())
