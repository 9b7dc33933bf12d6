"""The supervisor daemon: assignment sync, bundle download, worker process launch/monitor.

:class:`Supervisor` is the daemon (``stormpy supervisor`` runs one; tests and ``dev-cluster`` may
run it in-process). It imports shared services only, never Nimbus or the CLI.
"""

from stormpy.supervisor.daemon import Supervisor
from stormpy.supervisor.download import BundleDownloader, DownloadError
from stormpy.supervisor.local_state import SupervisorDirs

__all__ = ["BundleDownloader", "DownloadError", "Supervisor", "SupervisorDirs"]
