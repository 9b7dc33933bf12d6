"""The acker's system streams (Storm's names)."""

ACK_INIT = "__ack_init"
ACK_ACK = "__ack_ack"
ACK_FAIL = "__ack_fail"
ACK_RESET_TIMEOUT = "__ack_reset_timeout"

ACKER_STREAMS = frozenset({ACK_INIT, ACK_ACK, ACK_FAIL, ACK_RESET_TIMEOUT})
