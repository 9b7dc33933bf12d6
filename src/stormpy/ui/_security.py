"""Who may call the UI: the token check and the CSRF rules.

Contract (docs/operations.md, "Security"):

* The token is ``ui.auth.token``, else ``nimbus.rpc.auth.token``; none means the UI is open.
* With a token, every POST needs ``Authorization: Bearer <token>`` (401 without it, 403 with a
  wrong one); with ``ui.auth.protect.gets`` the GETs of ``/api/v1`` and ``/metrics`` need it too.
  The pages and their static files are always served (they hold no data); their script asks for
  the token and sends it on each call.
* CSRF: a POST whose ``Origin`` is not the UI's own is refused (403). A POST from a browser
  context (it carries a ``Cookie`` or an ``Origin`` header) without an ``Authorization`` header
  must carry ``X-CSRF-Token`` equal to its ``stormpy_csrf`` cookie (double-submit; the pages set
  the cookie and send the header). A cross-site form can set neither header, so it cannot act.
  Scripts (no cookie, no Origin) need only the token.
"""

from __future__ import annotations

import hmac
import secrets
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from stormpy.config import rpc_auth_token

__all__ = ["CSRF_COOKIE", "CSRF_HEADER", "Denied", "UiAuth"]

CSRF_COOKIE = "stormpy_csrf"
CSRF_HEADER = "x-csrf-token"


class Denied(Exception):
    """A refused request: HTTP ``status`` and the reason."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def ui_token(conf: Mapping[str, Any]) -> str | None:
    value = conf.get("ui.auth.token")
    if value is None or str(value) == "":
        return rpc_auth_token(conf)
    return str(value)


class UiAuth:
    """The checks above, for one UI configuration."""

    def __init__(self, conf: Mapping[str, Any]) -> None:
        self.token = ui_token(conf)
        self.protect_gets = bool(conf.get("ui.auth.protect.gets")) and self.token is not None

    @staticmethod
    def new_csrf_token() -> str:
        return secrets.token_urlsafe(24)

    def _bearer(self, headers: Mapping[str, str]) -> str | None:
        value = headers.get("authorization", "")
        scheme, _, credential = value.partition(" ")
        return credential.strip() if scheme.lower() == "bearer" and credential.strip() else None

    def _check_token(self, headers: Mapping[str, str], what: str) -> None:
        if self.token is None:
            return
        given = self._bearer(headers)
        if given is None:
            raise Denied(401, f"{what} needs the UI token: send 'Authorization: Bearer <token>' "
                              "(ui.auth.token, else nimbus.rpc.auth.token)")
        if not hmac.compare_digest(given.encode(), self.token.encode()):
            raise Denied(403, "wrong UI token in the Authorization header")

    def check_get(self, headers: Mapping[str, str]) -> None:
        """Raise Denied when a protected GET lacks the token."""
        if self.protect_gets:
            self._check_token(headers, "this GET (ui.auth.protect.gets is on)")

    def check_post(self, headers: Mapping[str, str], cookies: Mapping[str, str], scheme: str) -> None:
        """Raise Denied unless the POST passes the token and CSRF rules of the module contract."""
        origin = headers.get("origin")
        if origin and origin != "null":
            parts = urlsplit(origin)
            if parts.netloc != headers.get("host", "") or parts.scheme not in (scheme, "http", "https"):
                raise Denied(403, f"cross-origin POST from {origin} refused")
        elif origin == "null":
            raise Denied(403, "POST from an opaque origin refused")
        self._check_token(headers, "every POST")
        if "authorization" in headers:
            return
        if "cookie" in headers or origin:
            sent = headers.get(CSRF_HEADER, "")
            expected = cookies.get(CSRF_COOKIE, "")
            if not sent or not expected or not hmac.compare_digest(sent.encode(), expected.encode()):
                raise Denied(403, "CSRF check failed: send the X-CSRF-Token header with the value of "
                                  f"the {CSRF_COOKIE} cookie (the UI pages do)")
