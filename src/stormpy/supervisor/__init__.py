"""The supervisor daemon: assignment sync, bundle download, worker process launch/monitor.

:class:`Supervisor` is the daemon (``stormpy supervisor`` runs one; tests and ``dev-cluster`` may
run it in-process). It imports shared services only, never Nimbus or the CLI.
"""

from stormpy.cluster.local_layout import SupervisorDirs
from stormpy.supervisor.daemon import Supervisor
from stormpy.supervisor.download import BundleDownloader, DownloadError

__all__ = ["BundleDownloader", "DownloadError", "Supervisor", "SupervisorDirs"]
