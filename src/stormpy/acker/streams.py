"""The acker's system streams (Storm's names). ``Final``: the compiled tuple path uses them as
constants instead of looking them up per use."""

from typing import Final

ACK_INIT: Final = "__ack_init"
ACK_ACK: Final = "__ack_ack"
ACK_FAIL: Final = "__ack_fail"
ACK_RESET_TIMEOUT: Final = "__ack_reset_timeout"

ACKER_STREAMS = frozenset({ACK_INIT, ACK_ACK, ACK_FAIL, ACK_RESET_TIMEOUT})
