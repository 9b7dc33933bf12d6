"""The client side of the Nimbus protocol, shared by every process that talks to Nimbus.

Like Storm's storm-client, which holds ``NimbusClient``: the submitter, the operator CLI, the UI,
local mode, the test kit, the supervisors (bundle downloads, bundles sent back) and a replicating
Nimbus all reach Nimbus through this package, so each of these behaviours exists once:

* :mod:`.addresses`: ``host:port`` parsing and the seed list of a config;
* :mod:`.settings`: the RPC client settings of a config ("an RPC client from config");
* :mod:`.leader` and :mod:`.leader_memo`: which seed leads, and the last leader found;
* :mod:`.transfer`: the chunked bundle upload and download with their sha256 check;
* :mod:`.nimbus`: :class:`NimbusClient`, the calls to the leading Nimbus with failover;
* :mod:`.worker_actions`: a dump or profile asked of a worker through Nimbus, and the wait for
  its answer.

A shared service: it imports rpc, bundle, config, cluster, host and the topology description,
never a daemon; the daemons, local mode, the UI and the CLI import it.
"""

from stormpy._public import publish
from stormpy.client._addresses import CONNECT_TIMEOUT_SECS, parse_address, seed_addresses
from stormpy.client._leader import find_leader, leader_first
from stormpy.client._nimbus import NimbusClient
from stormpy.client._settings import rpc_client, rpc_settings
from stormpy.client._transfer import BundleDigest, download_bundle, upload_bundle
from stormpy.client._worker_actions import await_worker_action, request_worker_action

__all__ = [
    "CONNECT_TIMEOUT_SECS",
    "BundleDigest",
    "NimbusClient",
    "await_worker_action",
    "download_bundle",
    "find_leader",
    "leader_first",
    "parse_address",
    "request_worker_action",
    "rpc_client",
    "rpc_settings",
    "seed_addresses",
    "upload_bundle",
]

publish(__name__, globals())
