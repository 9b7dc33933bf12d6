"""The supervisor's parts without ZooKeeper or Nimbus: the crash-loop relaunch backoff and the
download retry backoff on a simulated clock, removing unused directories, and adoption skipping
what is not a running worker."""

from __future__ import annotations

import logging
import os
import threading
from pathlib import Path

from stormpy.cluster.local_layout import SupervisorDirs
from stormpy.supervisor.adoption import adopt_workers
from stormpy.supervisor.cleanup import remove_unused, stormdist_topology
from stormpy.supervisor.download import RETRY_MIN_SECS, DownloadError, DownloadQueue
from stormpy.supervisor.launcher import RelaunchBackoff
from stormpy.supervisor.sync import QUICK_EXIT_SECS
from stormpy.testing import wait_for

LOG = logging.getLogger("test-supervisor-parts")


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_crash_loop_is_relaunched_at_once_then_after_growing_delays() -> None:
    clock = Clock()
    relaunch = RelaunchBackoff(clock)
    quick = QUICK_EXIT_SECS / 10
    assert relaunch.note_exit(6700, quick) == 0.0
    assert relaunch.may_launch(6700)
    assert relaunch.note_exit(6700, quick) == 1.0
    assert not relaunch.may_launch(6700)
    clock.now += 1.0
    assert relaunch.may_launch(6700)
    assert [relaunch.note_exit(6700, quick) for _ in range(3)] == [2.0, 4.0, 8.0]
    assert relaunch.may_launch(6701)  # other ports are not held back


def test_a_long_run_or_an_unassigned_port_forgets_the_crash_loop() -> None:
    clock = Clock()
    relaunch = RelaunchBackoff(clock)
    for _ in range(3):
        relaunch.note_exit(6700, 0.1)
        relaunch.note_exit(6701, 0.1)
    assert relaunch.note_exit(6700, QUICK_EXIT_SECS) == 0.0
    assert relaunch.may_launch(6700)
    assert relaunch.note_exit(6700, 0.1) == 0.0  # counted from the start again
    relaunch.retain([6700])
    assert relaunch.may_launch(6701)
    assert relaunch.note_exit(6701, 0.1) == 0.0


class FlakyDownloader:
    """Fails while ``failing``; records every topology it was asked for."""

    def __init__(self) -> None:
        self.failing = True
        self.asked: list[str] = []

    def download(self, topology_id: str) -> None:
        self.asked.append(topology_id)
        if self.failing:
            raise DownloadError(f"cannot download {topology_id}: Nimbus is away")


def test_a_failed_download_is_held_back_by_a_growing_backoff_reset_by_success() -> None:
    clock = Clock()
    downloader = FlakyDownloader()
    done = threading.Semaphore(0)
    queue = DownloadQueue(downloader, done.release, log=LOG, clock=clock)  # type: ignore[arg-type]
    queue.start()
    try:
        def attempt() -> None:
            assert queue.request("t-1")
            wait_for(lambda: done.acquire(blocking=False), 30, "the download attempt")

        attempt()
        assert not queue.request("t-1")  # backing off
        clock.now += RETRY_MIN_SECS
        attempt()
        clock.now += RETRY_MIN_SECS
        assert not queue.request("t-1")  # the second delay is twice the first
        clock.now += RETRY_MIN_SECS
        downloader.failing = False
        attempt()
        assert queue.request("t-1")  # success reset the backoff
        wait_for(lambda: done.acquire(blocking=False), 30, "the last download")
        assert downloader.asked == ["t-1"] * 4
    finally:
        queue.stop(30)


def test_the_download_service_takes_requests_in_order_and_outlives_a_failing_on_done() -> None:
    downloader = FlakyDownloader()
    downloader.failing = False
    calls: list[int] = []

    def on_done() -> None:
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError("the supervisor's sync hook broke")

    queue = DownloadQueue(downloader, on_done, log=LOG)  # type: ignore[arg-type]
    assert queue._service.name == "supervisor-download"  # noqa: SLF001 - the one service base
    queue.start()
    try:
        assert [queue.request(t) for t in ("t-1", "t-2", "t-3", "t-2")] == [True, True, True, False]
        wait_for(lambda: len(calls) == 3, 30, "three download attempts")
        assert downloader.asked == ["t-1", "t-2", "t-3"]
        assert queue.pending() == set()
        assert queue.request("t-4")  # still serving after the failure
        wait_for(lambda: downloader.asked[-1:] == ["t-4"], 30, "the download after the failure")
    finally:
        assert queue.stop(30)


def test_a_stopped_download_queue_drops_what_is_still_queued() -> None:
    release = threading.Event()

    class SlowDownloader(FlakyDownloader):
        def download(self, topology_id: str) -> None:
            self.asked.append(topology_id)
            release.wait(30)

    downloader = SlowDownloader()
    queue = DownloadQueue(downloader, lambda: None, log=LOG)  # type: ignore[arg-type]
    queue.start()
    try:
        assert queue.request("t-1") and queue.request("t-2")
        wait_for(lambda: downloader.asked == ["t-1"], 30, "the first download to begin")
        queue._service.request_stop()  # noqa: SLF001 - a stop asked during a download
    finally:
        release.set()
        assert queue.stop(30)
    assert downloader.asked == ["t-1"]  # t-2 was dropped


def make_dirs(tmp_path: Path) -> SupervisorDirs:
    dirs = SupervisorDirs(tmp_path, "sup-1")
    for topology_id in ("keep-1", "gone-1"):
        (dirs.code_dir(topology_id)).mkdir(parents=True)
    (dirs.stormdist_root / ".tmp-gone-1-abc").mkdir()
    (dirs.stormdist_root / ".tmp-keep-1-abc").mkdir()
    for topology_id, port in (("keep-1", 6700), ("keep-1", 6701), ("gone-1", 6702)):
        dirs.worker_dir(topology_id, port).mkdir(parents=True)
    return dirs


def test_remove_unused_keeps_only_the_named_code_and_worker_slots(tmp_path: Path) -> None:
    dirs = make_dirs(tmp_path)
    remove_unused(dirs, {"keep-1"}, {("keep-1", 6700)}, LOG)
    assert sorted(p.name for p in dirs.stormdist_root.iterdir()) == [".tmp-keep-1-abc", "keep-1"]
    assert [(t, p) for t, p, _ in dirs.worker_dirs()] == [("keep-1", 6700)]


def test_a_downloads_temporary_directory_belongs_to_its_topology() -> None:
    assert stormdist_topology(".tmp-word-count-1-1700000000-4f2a") == "word-count-1-1700000000"
    assert stormdist_topology("word-count-1") == "word-count-1"


def test_adoption_skips_dirs_without_a_running_worker(tmp_path: Path) -> None:
    dirs = make_dirs(tmp_path)
    dirs.pid_file("keep-1", 6700).write_text(str(os.getpid()))  # alive, but not that worker
    dirs.pid_file("keep-1", 6701).write_text("not a pid")
    assert adopt_workers(dirs, (6700, 6701, 6702), 1.0, LOG) == {}
