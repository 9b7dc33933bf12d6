"""Test kit for the UI tests: a module-scoped ProcessCluster running ``stormpy ui`` beside Nimbus
with an endless word count submitted, an HTTP client on the UI, and the checks that fail (not
skip) under ``CI=true`` when a part the tests need is missing."""

from __future__ import annotations

import shutil
import struct
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NoReturn

import pytest
from cluster_kit import filewc, running_cluster, submit

from parts_kit import unavailable
from stormpy.testing._cluster import FAST_TIMEOUTS, ProcessCluster

UI_CONF = {**FAST_TIMEOUTS, "ui.poll.secs": 0.3}


def missing(what: str) -> NoReturn:
    """Skip the test, or fail it under CI=true (where every part must be installed)."""
    unavailable(what, "not installed", "install it, e.g. with `make test`")


def need_ui_stack() -> None:
    for module in ("starlette", "uvicorn", "prometheus_client", "httpx"):
        try:
            __import__(module)
        except ImportError:
            missing(f"Python package {module} (the 'ui' and 'dev' extras)")


class Topology:
    """The word count the UI tests watch."""

    def __init__(self, cluster: ProcessCluster, topology_id: str, name: str, out: Path) -> None:
        self.cluster = cluster
        self.id = topology_id
        self.name = name
        self.out = out


@pytest.fixture(scope="module", name="ui_cluster")
def ui_cluster_fixture(zookeeper: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProcessCluster]:
    """Nimbus + two supervisors + the UI, short timeouts, shared by a test module."""
    need_ui_stack()
    with running_cluster(zookeeper, tmp_path_factory.mktemp("ui-cluster"), "ui", conf=UI_CONF,
                         ui=True) as c:
        yield c


@pytest.fixture(scope="module", name="wordcount")
def wordcount_fixture(ui_cluster: ProcessCluster, bundle_path: Path,
                      tmp_path_factory: pytest.TempPathFactory) -> Topology:
    """An endless word count (two workers), running."""
    out = tmp_path_factory.mktemp("wc-out")
    topology_id = submit(ui_cluster, bundle_path, "wordcount", out, count=0, rate=40.0, workers=2)
    return Topology(ui_cluster, topology_id, "wordcount", out)


def chrome_driver(download_dir: Path) -> Any:
    """A headless Chromium (Debian's ``chromium`` + ``chromium-driver``) through Selenium."""
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        missing("Python package selenium (the 'dev' extra)")
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    driver_path = shutil.which("chromedriver")
    if browser is None or driver_path is None:
        missing("Debian packages chromium and chromium-driver (`make chromium`)")
    options = webdriver.ChromeOptions()
    options.binary_location = str(browser)
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                "--window-size=1400,1300", f"--user-data-dir={download_dir / 'profile'}"):
        options.add_argument(arg)
    return webdriver.Chrome(options=options, service=Service(executable_path=str(driver_path)))


def png_is_not_blank(data: bytes) -> bool:
    """True when a PNG's pixels are not all one colour (decoded with zlib only: the filtered
    scanlines of a one-colour image hold only a handful of distinct bytes)."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat = 8, b""
    width = height = 0
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        chunk = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            width, height = struct.unpack(">II", chunk[:8])
        elif kind == b"IDAT":
            idat += chunk
        pos += 12 + length
    raw = zlib.decompress(idat)
    return width > 100 and height > 100 and len(set(raw)) > 24


__all__ = ["Topology", "chrome_driver", "filewc", "missing", "png_is_not_blank",
           "ui_cluster_fixture", "wordcount_fixture"]
