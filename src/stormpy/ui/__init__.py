"""stormpy's web UI: Storm's REST API (``/api/v1``), the pages and Prometheus ``/metrics``.

``stormpy ui`` runs :func:`~stormpy.ui._server.run_ui`; docs/operations.md is the operator's guide.
Needs the ``ui`` extra (Starlette, uvicorn, prometheus_client).
"""

from __future__ import annotations

__all__: list[str] = []  # the server is run by ``stormpy ui``; nothing here is imported by users
