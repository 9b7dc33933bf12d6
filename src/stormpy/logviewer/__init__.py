"""The per-host log server (Storm's logviewer): worker logs, dumps and profiles over HTTP, with
log cleanup. :mod:`.files` reads and searches the log directory safely, :mod:`.app` is the REST
API, :mod:`.server` runs it (inside the supervisor or as ``stormpy logviewer``)."""
