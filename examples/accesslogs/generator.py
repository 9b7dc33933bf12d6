"""A deterministic generator of Apache combined-format access logs.

``generate_lines(n, seed)`` always yields the same ``n`` lines for the same seed: requests from a
few hundred clients over half an hour to a small shop (pages, products, an API, static files),
with realistic status codes, sizes, referrers and user agents, and about 1% malformed lines
(truncated writes, TLS handshakes on the plain-HTTP port, garbage).
"""

from __future__ import annotations

import os
import random
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

START = datetime(2024, 3, 10, 9, 0, 0, tzinfo=UTC)
SPAN_SECONDS = 30 * 60
MALFORMED_RATE = 0.01

PAGES = [("/", 30), ("/index.html", 6), ("/products", 14), ("/cart", 6), ("/checkout", 3),
         ("/login", 4), ("/api/v1/search", 10), ("/api/v1/cart", 5), ("/static/app.js", 12),
         ("/static/style.css", 12), ("/images/logo.png", 9), ("/favicon.ico", 5),
         ("/admin", 1), ("/wp-login.php", 1)]
PRODUCTS = 12
AGENTS = [
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) "
    "Chrome/122.0 Safari/537.36",
    "Mozilla/5.0 (Macintosh; Intel Mac OS X 14_3) AppleWebKit/605.1.15 (KHTML, like Gecko) "
    "Version/17.3 Safari/605.1.15",
    "Mozilla/5.0 (X11; Linux x86_64; rv:123.0) Gecko/20100101 Firefox/123.0",
    "Mozilla/5.0 (iPhone; CPU iPhone OS 17_3 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like "
    "Gecko) Mobile/15E148",
    "curl/8.5.0",
    "Googlebot/2.1 (+http://www.google.com/bot.html)",
]
REFERRERS = ["-", "https://www.google.com/", "https://shop.example.com/",
             "https://shop.example.com/products", "https://news.ycombinator.com/"]


def _request(rng: random.Random) -> tuple[str, str, int, int | None]:
    """(method, target, status, bytes or None for '-')."""
    path = rng.choices([p for p, _ in PAGES], [w for _, w in PAGES])[0]
    method = "GET"
    if path == "/products" and rng.random() < 0.6:
        path = f"/products/{rng.randint(1, PRODUCTS)}"
    if path in ("/cart", "/checkout", "/login", "/api/v1/cart") and rng.random() < 0.5:
        method = "POST"
    target = path
    if path == "/api/v1/search":
        target = f"{path}?q={rng.choice(['shoes', 'hat', 'bag', 'socks', 'coat'])}"
    if path in ("/admin", "/wp-login.php"):
        return method, target, rng.choice([403, 404]), rng.randint(150, 300)
    if path.startswith(("/static/", "/images/", "/favicon")):
        if rng.random() < 0.35:
            return method, target, 304, None
        size = {"/static/app.js": 184_213, "/static/style.css": 23_871,
                "/images/logo.png": 8_512, "/favicon.ico": 1_150}[path]
        return method, target, 200, size
    roll = rng.random()
    if roll < 0.012:
        return method, target, 500, rng.randint(300, 600)
    if roll < 0.018:
        return method, target, 503, rng.randint(200, 400)
    if roll < 0.04:
        return method, target, 404, rng.randint(150, 300)
    if method == "POST" and path in ("/cart", "/login"):
        return method, target, 302, None
    return method, target, 200, rng.randint(2_000, 60_000)


def _malformed(rng: random.Random, good: str) -> str:
    kind = rng.randrange(3)
    if kind == 0:
        return good[: rng.randint(10, len(good) - 20)]  # truncated write
    if kind == 1:
        return good.split(' "', 1)[0] + ' "\\x16\\x03\\x01\\x02\\x00\\x01" 400 226 "-" "-"'
    return "".join(rng.choice("abcdef0123456789 -[]\"") for _ in range(rng.randint(5, 60)))


def generate_lines(n: int, seed: int = 7) -> Iterator[str]:
    """The ``n`` lines of the log for ``seed`` (no trailing newlines), in time order."""
    rng = random.Random(seed)
    clients = [f"{rng.randint(11, 223)}.{rng.randint(0, 255)}.{rng.randint(0, 255)}."
               f"{rng.randint(1, 254)}" for _ in range(400)]
    users = ["-"] * 12 + ["alice", "bob", "carol"]
    for i in range(n):
        when = START + timedelta(seconds=(i * SPAN_SECONDS) // max(n, 1))
        method, target, status, size = _request(rng)
        line = (f'{rng.choice(clients)} - {rng.choice(users)} '
                f'[{when.strftime("%d/%b/%Y:%H:%M:%S %z")}] "{method} {target} HTTP/1.1" {status} '
                f'{"-" if size is None else size} "{rng.choice(REFERRERS)}" "{rng.choice(AGENTS)}"')
        if rng.random() < MALFORMED_RATE:
            line = _malformed(rng, line)
        yield line


def ensure_log(path: str | os.PathLike[str], n: int, seed: int = 7) -> Path:
    """Write the log for (``n``, ``seed``) to ``path`` unless it exists; returns the path.

    Written to a temporary file and renamed, so a reader never sees a partial log."""
    target = Path(path)
    if target.exists():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    with tmp.open("w", encoding="utf-8", newline="\n") as out:
        for line in generate_lines(n, seed):
            out.write(line)
            out.write("\n")
    os.replace(tmp, target)
    return target
