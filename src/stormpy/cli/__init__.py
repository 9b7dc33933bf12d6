"""The ``stormpy`` command line (click); commands stay thin and call clients or daemons."""
