"""Leader discovery: which of a set of Nimbus seeds leads now.

Contract: :func:`find_leader` asks each seed in turn ``get_leader``; the first answer naming a
leader wins: the seed itself when it says it leads, else the leader it names (a standby knows the
leader from ZooKeeper; a bind-all host it names becomes 127.0.0.1, as in the seeds). A seed that
accepts no connection within ``connect_timeout_secs``, or answers with an error, is skipped; None
when no seed names a leader. The answer does not depend on the order of the seeds as long as the
seeds agree on the leader. :func:`leader_first` orders seeds so the leader is asked first and the
others stay in their order (a standby still serves what it replicated).

The last leader found for a set of seeds is kept by :mod:`stormpy.client._leader_memo`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from stormpy.client._addresses import CONNECT_TIMEOUT_SECS, connectable, parse_address
from stormpy.rpc import RpcClient
from stormpy.rpc.errors import AuthorizationError, RpcError

__all__ = ["find_leader", "leader_first"]

ClientFactory = Callable[[str], RpcClient]


def find_leader(seeds: Sequence[str], *, auth_token: str | None = None,
                timeout_secs: float = 2.0, connect_timeout_secs: float = CONNECT_TIMEOUT_SECS,
                curve_server_key: bytes | None = None,
                client_factory: ClientFactory | None = None,
                raise_refusal: bool = False) -> str | None:
    """``host:port`` of the leader as the first seed that knows says (see the module docstring).

    ``client_factory(address)`` builds the RPC client for a seed (by default one with
    ``timeout_secs``, no retry, ``auth_token``, ``connect_timeout_secs`` and
    ``curve_server_key``). With ``raise_refusal`` a seed refusing the caller's credentials
    raises its :class:`~stormpy.rpc.errors.AuthorizationError` instead of being skipped."""
    def default_client(address: str) -> RpcClient:
        host, port = parse_address(address)
        return RpcClient(host, port, timeout_secs=timeout_secs, retries=0, auth_token=auth_token,
                         service="Nimbus", connect_timeout_secs=connect_timeout_secs,
                         curve_server_key=curve_server_key)

    factory = client_factory or default_client
    for seed in seeds:
        client = factory(seed)
        try:
            answer = client.call("get_leader")
        except AuthorizationError:
            if raise_refusal:
                raise
            continue
        except RpcError:
            continue
        finally:
            client.close()
        leader = _named_leader(seed, answer)
        if leader is not None:
            return leader
    return None


def _named_leader(seed: str, answer: Any) -> str | None:
    if not isinstance(answer, Mapping):
        return None
    if answer.get("is_leader"):
        return seed
    leader = answer.get("leader")
    if isinstance(leader, str) and leader:
        try:
            return connectable(leader)
        except ValueError:
            return None
    return None


def leader_first(seeds: Sequence[str], leader: str | None) -> list[str]:
    """``seeds`` with ``leader`` first (added when it is not a seed), the rest in their order."""
    if leader is None:
        return list(seeds)
    return [leader, *[s for s in seeds if s != leader]]
