"""Process-level services shared by the daemons, the worker process and the development tools.

* :mod:`.daemon`: the daemon base (:class:`~stormpy.host.daemon.Daemon`: stop request, signal
  handling, ``run_forever``) and the one log-file set-up (:func:`~stormpy.host.daemon.log_to_file`).
* :mod:`.processes`: inspecting and stopping OS processes through psutil (identity by command line,
  SIGTERM → grace → SIGKILL).
* :mod:`.java`: finding the ``java`` executable (one rule for ZooKeeper and Spark).

A shared service at the bottom of the import order: it imports the standard library and psutil
only, never another stormpy package.
"""
