"""Process-level services shared by the daemons, the worker process and the development tools.

* :mod:`.daemon`: the daemon base (:class:`~stormpy.host.daemon.Daemon`: stop request, signal
  handling, ``run_forever``) and the one log-file set-up (:func:`~stormpy.host.daemon.log_to_file`).
* :mod:`.processes`: inspecting and stopping OS processes through psutil (identity by command line,
  SIGTERM → grace → SIGKILL).
* :mod:`.java`: finding the ``java`` executable (one rule for ZooKeeper and Spark).
* :mod:`.service`: :class:`~stormpy.host.service.Service`, the one background loop (rounds on a
  thread, wake, stop with join, errors logged with the service's name).
* :mod:`.backoff`: :class:`~stormpy.host.backoff.Backoff`, the one exponential backoff.

A shared service at the bottom of the import order: it imports the standard library and psutil
only, never another stormpy package.
"""
