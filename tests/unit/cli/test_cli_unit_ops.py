"""The on-call commands' logic (``cli/ops_cmds.py``), called in-process against a real log server
and a fake Nimbus: which workers ``stormpy logs`` reads and what it prints for each (log ends under
a heading, grep hits prefixed with the worker, sampled tuples of one component, each failure as one
``error:`` line naming the worker), following new lines, the log server's token, ``--worker`` and
``-l`` refusals with exit 2, and ``stormpy profile``'s wait, its refusals and its report."""

from __future__ import annotations

import io
import json
import urllib.error
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from driven_clock_kit import DrivenClock

from stormpy.cli.ops_cmds import (
    WorkerLogReader,
    _get_json,
    _sampled_by,
    _workers,
    action_patience,
    check_level_settings,
    follow_worker_logs,
    log_config_text,
    log_readers,
    print_action_report,
    print_worker_logs,
    run_worker_action,
    worker_address,
)
from stormpy.host import waiting
from stormpy.logviewer.server import LogviewerServer

TOKEN = "s3cret"
FILE = "worker-wc-1-17-6700.log"


@pytest.fixture
def server(tmp_path: Path) -> Iterator[tuple[Path, str]]:
    served = LogviewerServer({"logviewer.port": 0, "logviewer.host": "127.0.0.1", "ui.auth.token": TOKEN},
                             logs=tmp_path).start()
    try:
        yield tmp_path, served.url
    finally:
        served.stop()


def reader(url: str | None, file: str = FILE, port: int = 6700, token: str | None = TOKEN) -> WorkerLogReader:
    return WorkerLogReader({"host": "h1", "port": port, "logviewer": url, "file": file,
                            "topology_id": "wc-1-17"}, token)


class FakeNimbus:
    """Topology ``wc`` (id ``wc-1-17``): split on tasks 1-2, count on 3-4; three workers."""

    def __init__(self, results: list[dict[str, Any]] | None = None) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.results = list(results or [])

    def topology_info(self, name: str) -> dict[str, Any]:
        assert name == "wc"
        return {"id": "wc-1-17", "name": name,
                "components": {"split": {"task_ids": [1, 2]}, "count": {"task_ids": [3, 4]},
                               "empty": {}},
                "workers": [{"host": "h1", "port": 6700, "node": "s1", "executors": [[1, 1], [3, 3]]},
                            {"host": "h2", "port": 6701, "node": "s2", "executors": [[2, 2]]},
                            {"host": "h3", "port": 6702, "node": "s3", "executors": [[4, 4]]}]}

    def cluster_info(self) -> dict[str, Any]:
        return {"supervisors": [{"id": "s1", "logviewer_port": 8000}, {"id": "s2", "logviewer_port": 8001},
                                {"id": "s3"}]}

    def call(self, method: str, **args: Any) -> Any:
        self.calls.append((method, args))
        if method == "request_worker_action":
            return {"request": "r-1"}
        if method == "worker_action_result":
            return self.results.pop(0) if len(self.results) > 1 else self.results[0]
        return {"method": method, "b": 1, "a": [2]}


def test_workers_of_a_component_with_their_log_server_and_file() -> None:
    info, found = _workers(FakeNimbus(), "wc", "split")
    assert info["id"] == "wc-1-17"
    assert [(w["host"], w["logviewer"], w["topology_id"], w["file"]) for w in found] == [
        ("h1", "http://h1:8000", "wc-1-17", "worker-wc-1-17-6700.log"),
        ("h2", "http://h2:8001", "wc-1-17", "worker-wc-1-17-6701.log")]
    _info, every = _workers(FakeNimbus(), "wc", None, events=True)
    assert [(w["port"], w["logviewer"], w["file"]) for w in every] == [
        (6700, "http://h1:8000", "worker-wc-1-17-6700-events.log"),
        (6701, "http://h2:8001", "worker-wc-1-17-6701-events.log"),
        (6702, None, "worker-wc-1-17-6702-events.log")]
    assert [w["port"] for w in _workers(FakeNimbus(), "wc", "count")[1]] == [6700, 6702]
    assert _workers(FakeNimbus(), "wc", "empty")[1] == []


def test_workers_of_an_unknown_component_names_the_components(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        _workers(FakeNimbus(), "wc", "spilt")
    assert exit_info.value.code == 2
    assert capsys.readouterr().err == ("error: topology wc has no component 'spilt' "
                                       "(components: count, empty, split)\n")


def test_a_topology_without_components_listed(capsys: pytest.CaptureFixture[str]) -> None:
    class Bare(FakeNimbus):
        def topology_info(self, name: str) -> dict[str, Any]:
            return {"id": "wc-1-17", "name": name, "workers": []}

    with pytest.raises(SystemExit):
        _workers(Bare(), "wc", "split")
    assert capsys.readouterr().err == "error: topology wc has no component 'split' (components: )\n"


def test_log_readers_say_which_workers_run_no_log_server(capsys: pytest.CaptureFixture[str]) -> None:
    _info, workers = _workers(FakeNimbus(), "wc", None)
    readers = log_readers(workers, TOKEN, "wc", None)
    assert [(r.label, r.server, r.token) for r in readers] == [("h1:6700", "http://h1:8000", TOKEN),
                                                                ("h2:6701", "http://h2:8001", TOKEN)]
    assert capsys.readouterr().err == "error: h3:6702: its supervisor runs no log server (logviewer.port)\n"


@pytest.mark.parametrize(("component", "message"), [
    (None, "error: topology wc has no running workers\n"),
    ("split", "error: topology wc has no running workers of split\n")])
def test_no_running_worker_ends_logs_with_exit_1(component: str | None, message: str,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        log_readers([], None, "wc", component)
    assert exit_info.value.code == 1 and capsys.readouterr().err == message


def test_the_log_server_is_asked_with_the_token(server: tuple[Path, str]) -> None:
    logs, url = server
    (logs / FILE).write_text("line\n")
    assert _get_json(f"{url}/api/v1/log?file={FILE}&length=100", TOKEN)["content"] == "line\n"
    with pytest.raises(urllib.error.HTTPError) as err:
        _get_json(f"{url}/api/v1/log?file={FILE}&length=100", None)
    assert err.value.code in (401, 403)


def test_log_ends_under_a_heading_each(server: tuple[Path, str], capsys: pytest.CaptureFixture[str]) -> None:
    logs, url = server
    (logs / FILE).write_text("one\ntwo\nthree\n")
    (logs / "worker-wc-1-17-6701.log").write_text("other\n")
    readers = [reader(url), reader(url, "worker-wc-1-17-6701.log", 6701)]
    print_worker_logs(readers, "wc", None, None, 9, events=False)
    assert capsys.readouterr().out == (f"== h1:6700 ({FILE}) ==\nwo\nthree\n"
                                       "== h1:6701 (worker-wc-1-17-6701.log) ==\nother\n")
    assert readers[0].offset == len("one\ntwo\nthree\n")


def test_grep_prints_the_hits_prefixed_and_moves_to_the_end(server: tuple[Path, str],
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    logs, url = server
    (logs / FILE).write_text("hit a\nmiss\nhit b\n")
    one = reader(url)
    print_worker_logs([one], "wc", "hit", None, 4096, events=False)
    assert capsys.readouterr().out == "h1:6700 hit a\nh1:6700 hit b\n"
    assert one.offset == len("hit a\nmiss\nhit b\n")


def test_sampled_tuples_of_one_component(server: tuple[Path, str],
                                         capsys: pytest.CaptureFixture[str]) -> None:
    logs, url = server
    events = "worker-wc-1-17-6700-events.log"
    (logs / events).write_text('{"component": "split", "v": 1}\n{"component": "count"}\n'
                               'not json\n["split"]\n{"component": "split", "v": 2}\n')
    shown = _sampled_by("split")
    print_worker_logs([reader(url, events)], "wc", None, shown, 4096, events=True)
    assert capsys.readouterr().out == (f"== h1:6700 ({events}) ==\n"
                                       '{"component": "split", "v": 1}\n{"component": "split", "v": 2}\n')
    print_worker_logs([reader(url, events)], "wc", "v", shown, 4096, events=True)
    assert capsys.readouterr().out == ('h1:6700 {"component": "split", "v": 1}\n'
                                       'h1:6700 {"component": "split", "v": 2}\n')


def test_each_failure_is_one_error_line_naming_the_worker(server: tuple[Path, str],
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    _logs, url = server
    print_worker_logs([reader(url, "worker-wc-1-17-6700-events.log")], "wc", None, None, 100, events=True)
    assert capsys.readouterr().err == ("error: h1:6700: no sampled tuples yet (turn sampling on with "
                                       "`stormpy debug wc --enable`)\n")
    print_worker_logs([reader(url)], "wc", None, None, 100, events=False)
    err = capsys.readouterr().err
    assert err.startswith("error: h1:6700: log server answered 404: ") and "\n" in err
    print_worker_logs([reader(url, token=None)], "wc", "x", None, 100, events=True)
    assert capsys.readouterr().err.startswith("error: h1:6700: log server answered 40")
    print_worker_logs([reader("http://127.0.0.1:9")], "wc", None, None, 100, events=False)
    assert capsys.readouterr().err.startswith(
        "error: h1:6700: cannot reach its log server http://127.0.0.1:9: ")


def test_following_prints_new_lines_filtered_each_second(server: tuple[Path, str],
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    logs, url = server
    current = logs / FILE
    current.write_text("old\n")
    readers = [reader("http://127.0.0.1:9", port=6701), reader(url)]
    readers[1].tail(100)
    sleeps: list[float] = []
    with current.open("a") as f:
        f.write('{"component": "split", "x": 1}\n{"component": "count", "x": 2}\nplain x\nother\n')
    follow_worker_logs(readers, None, None, sleeps.append, rounds=1)
    assert sleeps == [1.0]
    assert capsys.readouterr().out == ('h1:6700 {"component": "split", "x": 1}\n'
                                       'h1:6700 {"component": "count", "x": 2}\n'
                                       'h1:6700 plain x\nh1:6700 other\n')
    with current.open("a") as f:
        f.write('{"component": "split", "x": 3}\n{"component": "split", "y": 4}\nx\n')
    follow_worker_logs(readers, "x", _sampled_by("split"), sleeps.append, rounds=2)
    assert sleeps == [1.0, 1.0, 1.0]
    assert capsys.readouterr().out == 'h1:6700 {"component": "split", "x": 3}\n'


def test_worker_address() -> None:
    assert worker_address("10.0.0.5:6700") == ("10.0.0.5", 6700)
    assert worker_address("h:a:1") == ("h:a", 1)


@pytest.mark.parametrize("worker", ["h:67x", ":6700", "6700", "h:", "h:-1"])
def test_a_bad_worker_address_names_the_option(worker: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        worker_address(worker)
    assert exit_info.value.code == 2
    assert capsys.readouterr().err == f"error: --worker {worker!r} must be HOST:PORT\n"


def test_action_patience() -> None:
    assert action_patience("cpu", 30) == 90.0
    assert action_patience("jstack", 30) == 60.0 and action_patience("heap", 5) == 60.0


def test_a_profile_is_polled_until_done() -> None:
    nimbus = FakeNimbus([{"status": "pending"}, {"status": "pending"},
                         {"status": "done", "result": {"file": "cpu-1.txt"}}])
    clock = DrivenClock()
    assert run_worker_action(nimbus, "wc", "h1", 6700, "cpu", 5, clock, clock.sleep) == "cpu-1.txt"
    assert clock.sleeps == [0.5, 0.5]
    assert nimbus.calls == [
        ("request_worker_action", {"name": "wc", "host": "h1", "port": 6700, "action": "cpu",
                                   "args": {"seconds": 5}}),
        *[("worker_action_result", {"name": "wc", "request": "r-1"})] * 3]
    heap = FakeNimbus([{"status": "done", "result": {"file": "heap-1.txt"}}])
    assert run_worker_action(heap, "wc", "h1", 6700, "heap", 5, clock, clock.sleep) == "heap-1.txt"
    assert heap.calls[0][1]["args"] == {} and len(heap.calls) == 2


def test_a_worker_that_never_answers_is_given_up_at_the_patience(capsys: pytest.CaptureFixture[str]) -> None:
    nimbus = FakeNimbus([{"status": "pending"}])
    clock = DrivenClock()
    with pytest.raises(SystemExit) as exit_info:
        run_worker_action(nimbus, "wc", "h1", 6700, "cpu", 10, clock, clock.sleep)
    assert exit_info.value.code == 1
    assert capsys.readouterr().err == "error: worker h1:6700 did not answer within 70 s (is it running?)\n"
    assert clock.sleeps == [0.5] * 140  # polled until exactly the deadline, not past it


def test_the_action_wait_runs_on_the_clock_it_is_given(monkeypatch: pytest.MonkeyPatch,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    def forbidden(*_args: object) -> float:
        raise AssertionError("the real clock was used")
    monkeypatch.setattr(waiting.time, "monotonic", forbidden)
    monkeypatch.setattr(waiting.time, "sleep", forbidden)
    clock = DrivenClock(start=0.0)
    nimbus = FakeNimbus([{"status": "pending"}])
    with pytest.raises(SystemExit) as exit_info:
        run_worker_action(nimbus, "wc", "h1", 6700, "heap", 0, clock, clock.sleep)
    assert exit_info.value.code == 1
    assert capsys.readouterr().err == "error: worker h1:6700 did not answer within 60 s (is it running?)\n"
    assert clock.now == 60.0 and len(nimbus.calls) == 1 + 121


def test_a_worker_answering_an_error_is_exit_1(capsys: pytest.CaptureFixture[str]) -> None:
    nimbus = FakeNimbus([{"status": "failed", "error": "no jstack on this host"}])
    with pytest.raises(SystemExit) as exit_info:
        run_worker_action(nimbus, "wc", "h1", 6700, "jstack", 10, DrivenClock(), DrivenClock().sleep)
    assert exit_info.value.code == 1
    assert capsys.readouterr().err == "error: worker h1:6700: no jstack on this host\n"


def test_the_report_is_printed_from_the_log_server(server: tuple[Path, str],
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    logs, url = server
    (logs / "jstack-1.txt").write_text("Thread main\n  at x\n")
    print_action_report("jstack", "h1:6700", "jstack-1.txt", url, TOKEN)
    out, err = capsys.readouterr()
    assert out == "Thread main\n  at x\n"
    assert err == f"jstack of h1:6700: jstack-1.txt on {url}\n"
    big = "".join(f"frame {i:07d}\n" for i in range(200_000))  # 2.8 MB: more than one answer
    (logs / "cpu-2.txt").write_text(big)
    print_action_report("cpu", "h1:6700", "cpu-2.txt", url, TOKEN)
    assert capsys.readouterr().out == big
    print_action_report("heap", "h1:6700", "heap-1.txt", None, TOKEN)
    assert capsys.readouterr() == ("", "heap of h1:6700: heap-1.txt on (no log server)\n")
    print_action_report("cpu", "h1:6700", "cpu-1.txt", "http://127.0.0.1:9", TOKEN)
    out, err = capsys.readouterr()
    assert out == "" and err.startswith("cpu of h1:6700: cpu-1.txt on http://127.0.0.1:9\n"
                                        "error: cannot read cpu-1.txt from http://127.0.0.1:9: ")


def test_a_bad_level_setting_is_refused_before_nimbus(capsys: pytest.CaptureFixture[str]) -> None:
    check_level_settings(("ROOT=DEBUG", "stormpy.worker=INFO:30"))
    with pytest.raises(SystemExit) as exit_info:
        check_level_settings(("ROOT=DEBUG", "ROOT", "x=INFO:y"))
    assert exit_info.value.code == 2
    assert capsys.readouterr().err == "error: log level setting 'ROOT' must be LOGGER=LEVEL[:TIMEOUT_SECS]\n"


def test_log_levels_are_set_or_shown_as_sorted_json() -> None:
    nimbus = FakeNimbus()
    shown = log_config_text(nimbus, "wc", (), ())
    assert shown == json.dumps({"a": [2], "b": 1, "method": "get_log_config"}, indent=2, sort_keys=True)
    assert shown.startswith('{\n  "a": [\n    2\n  ],')
    assert json.loads(log_config_text(nimbus, "wc", ("ROOT=DEBUG",), ()))["method"] == "set_log_config"
    assert json.loads(log_config_text(nimbus, "wc", (), ("ROOT",)))["method"] == "set_log_config"
    assert nimbus.calls == [("get_log_config", {"name": "wc"}),
                            ("set_log_config", {"name": "wc", "settings": ["ROOT=DEBUG"], "resets": []}),
                            ("set_log_config", {"name": "wc", "settings": [], "resets": ["ROOT"]})]



def test_a_tail_of_nothing_reads_nothing_and_moves_to_the_end(server: tuple[Path, str]) -> None:
    logs, url = server
    (logs / FILE).write_text("x" * 1000)
    one = reader(url)
    assert one.tail(0) == "" and one.offset == 1000


def test_following_reads_more_than_a_default_answer_at_once(server: tuple[Path, str]) -> None:
    logs, url = server
    current = logs / FILE
    current.write_text("")
    one = reader(url)
    one.tail(100)
    written = "".join(f"line {i:06d}\n" for i in range(20_000))  # 240 kB, past the server's 50 kB default
    current.write_text(written)
    assert one.read_new() == written


class Refusing(WorkerLogReader):
    def tail(self, n: int) -> str:
        raise urllib.error.HTTPError(self.server, 500, "error", {}, io.BytesIO(b"disk \xff gone"))  # type: ignore[arg-type]


def test_a_refusal_is_printed_with_the_servers_answer(capsys: pytest.CaptureFixture[str]) -> None:
    refusing = Refusing({"host": "h1", "port": 6700, "logviewer": "http://h1:8000", "file": FILE,
                         "topology_id": "wc-1-17"}, None)
    print_worker_logs([refusing], "wc", None, None, 100, events=False)
    assert capsys.readouterr().err == "error: h1:6700: log server answered 500: disk \ufffd gone\n"


def test_a_fresh_reader_reads_the_log_from_its_start(server: tuple[Path, str]) -> None:
    logs, url = server
    (logs / FILE).write_text("first\nsecond\n")
    assert reader(url).read_new() == "first\nsecond\n"


def test_following_across_a_rotation_on_a_server_asking_for_the_token(server: tuple[Path, str]) -> None:
    logs, url = server
    current = logs / FILE
    current.write_text("one long first line\n")
    one = reader(url)
    one.tail(100)
    with current.open("a") as f:
        f.write("two\n")
    current.rename(logs / f"{FILE}.1")
    current.write_text("three\n")
    assert one.read_new() == "two\nthree\n"
