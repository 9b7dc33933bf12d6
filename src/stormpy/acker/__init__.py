"""The XOR acker: ledger logic and the ``__acker`` system bolt."""

from stormpy.acker.bolt import AckerBolt
from stormpy.acker.core import AckerCore
from stormpy.acker.ledger import AckLedger, Outcome
from stormpy.acker.rotating import RotatingMap

__all__ = ["AckLedger", "AckerBolt", "AckerCore", "Outcome", "RotatingMap"]
