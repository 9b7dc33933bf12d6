"""Who may call the UI (stormpy.ui._security), rule by rule: which token counts, the 401 and 403
answers and their messages, protected GETs, the Origin check and the double-submit CSRF rule."""

from __future__ import annotations

import pytest

from stormpy.ui._security import CSRF_COOKIE, CSRF_HEADER, Denied, UiAuth

TOKEN = {"ui.auth.token": "s3cret"}


def denied(
    auth: UiAuth, headers: dict[str, str], cookies: dict[str, str] | None = None, scheme: str = "http"
) -> Denied:
    with pytest.raises(Denied) as refused:
        auth.check_post(headers, cookies or {}, scheme)
    return refused.value


def test_the_token_is_the_ui_s_else_nimbus_s_and_numbers_count_as_text() -> None:
    assert UiAuth({}).token is None
    assert UiAuth({"ui.auth.token": "", "nimbus.rpc.auth.token": ""}).token is None
    assert UiAuth({"ui.auth.token": None, "nimbus.rpc.auth.token": "n"}).token == "n"
    assert UiAuth({"ui.auth.token": "", "nimbus.rpc.auth.token": "n"}).token == "n"
    assert UiAuth({"ui.auth.token": 1234, "nimbus.rpc.auth.token": "n"}).token == "1234"


def test_gets_are_protected_only_when_asked_and_a_token_exists() -> None:
    assert UiAuth({"ui.auth.protect.gets": True}).protect_gets is False
    UiAuth({"ui.auth.protect.gets": True}).check_get({})  # no token: nothing to check
    assert UiAuth(TOKEN).protect_gets is False
    UiAuth(TOKEN).check_get({})
    locked = UiAuth({**TOKEN, "ui.auth.protect.gets": True})
    assert locked.protect_gets is True
    with pytest.raises(Denied) as missing:
        locked.check_get({})
    assert missing.value.status == 401
    assert missing.value.message == (
        "this GET (ui.auth.protect.gets is on) needs the UI token: send 'Authorization: Bearer "
        "<token>' (ui.auth.token, else nimbus.rpc.auth.token)"
    )
    assert str(missing.value) == missing.value.message
    with pytest.raises(Denied) as wrong:
        locked.check_get({"authorization": "Bearer other"})
    assert (wrong.value.status, wrong.value.message) == (403, "wrong UI token in the Authorization header")
    locked.check_get({"authorization": "Bearer s3cret"})


@pytest.mark.parametrize(
    "header", ["", "Bearer", "Bearer ", "Bearer   ", "Basic s3cret", "s3cret", "Token s3cret"]
)
def test_a_post_without_a_bearer_credential_is_401(header: str) -> None:
    refused = denied(UiAuth(TOKEN), {"authorization": header} if header else {})
    assert refused.status == 401
    assert refused.message.startswith("every POST needs the UI token")


@pytest.mark.parametrize("header", ["Bearer s3cret", "bearer s3cret", "BEARER s3cret", "Bearer s3cret  "])
def test_the_bearer_scheme_is_case_blind_and_the_credential_trimmed(header: str) -> None:
    UiAuth(TOKEN).check_post({"authorization": header}, {}, "http")


@pytest.mark.parametrize("header", ["Bearer s3cre", "Bearer s3cretx", "Bearer S3CRET"])
def test_a_wrong_token_is_403(header: str) -> None:
    refused = denied(UiAuth(TOKEN), {"authorization": header})
    assert (refused.status, refused.message) == (403, "wrong UI token in the Authorization header")


def test_a_post_from_another_origin_or_an_opaque_one_is_refused_before_the_token() -> None:
    auth = UiAuth(TOKEN)
    good = {"authorization": "Bearer s3cret", "host": "ui:8080"}
    for origin in ("http://evil:8080", "http://ui:8081", "http://ui"):
        refused = denied(auth, {**good, "origin": origin})
        assert (refused.status, refused.message) == (403, f"cross-origin POST from {origin} refused")
    refused = denied(auth, {**good, "origin": "ftp://ui:8080"})
    assert refused.message == "cross-origin POST from ftp://ui:8080 refused"
    refused = denied(auth, {"host": "ui:8080", "origin": "null"})  # no token either: origin first
    assert (refused.status, refused.message) == (403, "POST from an opaque origin refused")
    refused = denied(auth, {"host": "ui:8080", "origin": "http://evil"})
    assert refused.status == 403 and "cross-origin" in refused.message
    # the UI's own origin under either scheme, or the request's own
    for origin, scheme in (
        ("http://ui:8080", "http"),
        ("https://ui:8080", "http"),
        ("http://ui:8080", "https"),
    ):
        auth.check_post({**good, "origin": origin}, {}, scheme)
    auth.check_post({**good, "origin": "wss://ui:8080"}, {}, "wss")


def test_a_browser_post_without_authorization_needs_the_csrf_header_equal_to_its_cookie() -> None:
    auth = UiAuth({})
    own = {"host": "ui:8080", "origin": "http://ui:8080"}
    auth.check_post({}, {}, "http")  # a script: no cookie, no Origin
    message = (
        "CSRF check failed: send the X-CSRF-Token header with the value of the stormpy_csrf "
        "cookie (the UI pages do)"
    )
    cases = [
        ({"cookie": "a=1"}, {}),  # a cookie, nothing else
        ({"cookie": "a=1", CSRF_HEADER: "abc"}, {}),  # header, no cookie
        ({"cookie": "a=1"}, {CSRF_COOKIE: "abc"}),  # cookie, no header
        ({"cookie": "a=1", CSRF_HEADER: "abd"}, {CSRF_COOKIE: "abc"}),  # not equal
        ({**own}, {}),  # an Origin alone marks a browser too
        ({**own, CSRF_HEADER: "abc"}, {CSRF_COOKIE: "abcd"}),
        ({**own, CSRF_HEADER: ""}, {CSRF_COOKIE: ""}),  # empty on both sides is no proof
    ]
    for headers, cookies in cases:
        refused = denied(auth, headers, cookies)
        assert (refused.status, refused.message) == (403, message), headers
    auth.check_post({"cookie": "a=1", CSRF_HEADER: "abc"}, {CSRF_COOKIE: "abc"}, "http")
    auth.check_post({**own, CSRF_HEADER: "abc"}, {CSRF_COOKIE: "abc"}, "http")
    # with the token in an Authorization header, a browser context needs no CSRF header
    UiAuth(TOKEN).check_post({**own, "cookie": "a=1", "authorization": "Bearer s3cret"}, {}, "http")
    # an open UI takes an Authorization header as proof of a script too
    auth.check_post({"cookie": "a=1", "authorization": "Bearer anything"}, {}, "http")


def test_csrf_tokens_are_fresh_and_url_safe() -> None:
    first, second = UiAuth.new_csrf_token(), UiAuth.new_csrf_token()
    assert first != second
    assert len(first) == 32 and all(c.isalnum() or c in "-_" for c in first)
