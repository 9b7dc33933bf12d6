"""tools/mutate.py's pinned equivalents: parsed from the list, recorded as survivors before mutmut
runs only while their function's hash is the pinned one, pinned from a run's results."""

from __future__ import annotations

import fnmatch
import importlib.util
import json
import os
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[3]
LEDGER = "src/stormpy/acker/ledger.py"
FAIL_8 = "stormpy.acker.ledger.xǁAckLedgerǁfail__mutmut_8"
FAIL_9 = "stormpy.acker.ledger.xǁAckLedgerǁfail__mutmut_9"
INIT_4 = "stormpy.acker.ledger.xǁAckLedgerǁinit__mutmut_4"


@pytest.fixture
def tool(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    spec = importlib.util.spec_from_file_location("mutate_tool_under_test", ROOT / "tools" / "mutate.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, module)  # dataclasses look their module up
    spec.loader.exec_module(module)
    monkeypatch.setattr(module, "WORK", tmp_path / "work")
    monkeypatch.setattr(module, "EQUIVALENTS_FILE", tmp_path / "equivalents.txt")
    monkeypatch.setattr(module, "TARGETS", {"ledger": module.Target((LEDGER,))})
    return module


def write_list(tool: ModuleType, *lines: str) -> None:
    tool.EQUIVALENTS_FILE.write_text("# accepted equivalents\n" + "\n".join(lines) + "\n")


def meta_path(tool: ModuleType) -> Path:
    return tool.WORK / "ledger" / "mutants" / (LEDGER + ".meta")


def write_meta(tool: ModuleType, codes: dict[str, int | None], hashes: dict[str, str]) -> None:
    path = meta_path(tool)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"exit_code_by_key": codes, "hash_by_function_name": hashes,
                                "type_check_error_by_key": {}, "durations_by_key": {},
                                "estimated_durations_by_key": {}}))


def test_the_list_gives_each_mutant_its_reason_and_pin(tool: ModuleType) -> None:
    write_list(tool, f"{FAIL_8} @abc123  # XORs 1 # into a dead value", f"{INIT_4}  # falsy either way")
    found = tool.equivalents()
    assert found == {FAIL_8: tool.Equivalent("XORs 1 # into a dead value", "abc123"),
                     INIT_4: tool.Equivalent("falsy either way", None)}
    assert tool.function_of(FAIL_8) == "xǁAckLedgerǁfail"
    assert tool.module_of(LEDGER) == "stormpy.acker.ledger"


def test_a_cold_run_gets_a_meta_file_with_only_the_pinned_equivalents(tool: ModuleType) -> None:
    write_list(tool, f"{FAIL_8} @h-fail  # a", f"{INIT_4}  # unpinned: run again",
               "stormpy.acker.core.x_other__mutmut_1 @h-other  # another file")
    assert tool.seed_equivalents("ledger") == 1
    meta = json.loads(meta_path(tool).read_text())
    assert meta["exit_code_by_key"] == {FAIL_8: 0}
    assert meta["hash_by_function_name"] == {"xǁAckLedgerǁfail": "h-fail"}
    # the keys mutmut's loader requires are all there
    assert set(meta) == {"exit_code_by_key", "hash_by_function_name", "type_check_error_by_key",
                         "durations_by_key", "estimated_durations_by_key"}


def test_a_warm_run_seeds_only_untested_equivalents_of_unchanged_functions(tool: ModuleType) -> None:
    write_list(tool, f"{FAIL_8} @h-fail  # a", f"{FAIL_9} @h-fail  # b", f"{INIT_4} @h-old  # c")
    write_meta(tool, {FAIL_8: None, FAIL_9: 1, INIT_4: None},
               {"xǁAckLedgerǁfail": "h-fail", "xǁAckLedgerǁinit": "h-new"})
    assert tool.seed_equivalents("ledger") == 1
    codes = json.loads(meta_path(tool).read_text())["exit_code_by_key"]
    # a result already there stays (even a kill); an edited function's mutant is tested again
    assert codes == {FAIL_8: 0, FAIL_9: 1, INIT_4: None}


def test_an_equivalent_counts_only_while_its_pin_matches(tool: ModuleType,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    write_list(tool, f"{FAIL_8} @h-fail  # a", f"{INIT_4} @h-old  # edited since", f"{FAIL_9}  # unpinned")
    write_meta(tool, {FAIL_8: 0, FAIL_9: 0, INIT_4: 0},
               {"xǁAckLedgerǁfail": "h-fail", "xǁAckLedgerǁinit": "h-new"})
    assert tool.accepted_for("ledger") == {FAIL_8, FAIL_9}
    assert tool.stale(tool.results("ledger"), tool.accepted_for("ledger")) == [INIT_4]
    assert tool.unkilled("ledger") == [INIT_4]
    tool.summary(["ledger"])
    out = capsys.readouterr().out
    row = next(line.split() for line in out.splitlines() if line.startswith("ledger "))
    # mutants, killed, survived, no test, equivalents, not run, score
    assert row == ["ledger", "3", "0", "1", "0", "2", "0", "0.0%"]
    assert ("1 equivalent(s) pinned to an edited function count as survivors until judged again: "
            f"{INIT_4}") in out


def test_pin_writes_the_current_hash_of_surviving_equivalents_only(tool: ModuleType) -> None:
    write_list(tool, f"{FAIL_8}  # a", f"{FAIL_9} @h-old  # b", f"{INIT_4}  # killed now: not pinned")
    write_meta(tool, {FAIL_8: 0, FAIL_9: 0, INIT_4: 1},
               {"xǁAckLedgerǁfail": "h-fail", "xǁAckLedgerǁinit": "h-init"})
    assert tool.pin(["ledger"]) == 2
    assert tool.EQUIVALENTS_FILE.read_text().splitlines() == [
        "# accepted equivalents",
        f"{FAIL_8} @h-fail  # a",
        f"{FAIL_9} @h-fail  # b",
        f"{INIT_4}  # killed now: not pinned",
    ]
    assert tool.pin(["ledger"]) == 0


def test_stale_copies_of_the_files_not_mutated_are_refreshed(tool: ModuleType, tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """mutmut copies ``src`` once: a warm run would test against old versions of the other
    modules. The copies are brought up to date; the mutated file and mutmut's own files stay."""
    root = tmp_path / "repo"
    (root / "src" / "pkg").mkdir(parents=True)
    (root / "src" / "pkg" / "other.py").write_text("X = 2\n")
    (root / "src" / "pkg" / "same.py").write_text("Y = 1\n")
    (root / "src" / "pkg" / "target.py").write_text("def f(): return 1\n")
    monkeypatch.setattr(tool, "ROOT", root)
    copies = tmp_path / "work" / "mutants" / "src"
    (copies / "pkg").mkdir(parents=True)
    (copies / "pkg" / "other.py").write_text("X = 1\n")
    (copies / "pkg" / "same.py").write_text("Y = 1\n")
    (copies / "pkg" / "target.py").write_text("# mutants of f\n")
    (copies / "pkg" / "target.py.meta").write_text("{}")
    assert tool.refresh_copies(copies, {"src/pkg/target.py"}) == 1
    assert (copies / "pkg" / "other.py").read_text() == "X = 2\n"
    assert (copies / "pkg" / "target.py").read_text() == "# mutants of f\n"
    assert (copies / "pkg" / "target.py.meta").read_text() == "{}"
    assert tool.refresh_copies(copies, {"src/pkg/target.py"}) == 0


def test_kills_names_the_test_that_killed_each_killed_mutant(tool: ModuleType,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    """The kill log (written by tests/conftest.py in each mutant's run) is read back per function:
    the last failure of each mutant still counted killed, most frequent cause first; a killed
    mutant without a logged failure is named with its exit code (killed by a signal)."""
    write_meta(tool, {FAIL_8: 1, FAIL_9: 1, INIT_4: 0, f"{INIT_4[:-1]}5": -24}, {})
    log = tool.WORK / "ledger" / tool.KILL_LOG
    records = [(FAIL_8, "test_a", "old error"), (FAIL_8, "test_b", "assert 1 == 2"),
               (FAIL_9, "test_b", "assert 1 == 2"), (INIT_4, "test_c", "killed earlier, survives now")]
    log.write_text("".join(json.dumps({"mutant": m, "test": t, "when": "call", "error": e}) + "\n"
                           for m, t, e in records))
    tool.kills("ledger")
    assert capsys.readouterr().out.splitlines() == [
        "xǁAckLedgerǁfail: 2 killed",
        "      2 by test_b",
        "        call: assert 1 == 2",
        "xǁAckLedgerǁinit: 1 killed",
        "   no failure logged: 5 (exit -24)",
    ]
    assert tool.mutation_env(tool.WORK)["STORMPY_MUTATION_KILL_LOG"] == str(tool.WORK / tool.KILL_LOG)
    assert "STORMPY_MUTATION_KILL_LOG" not in tool.mutation_env()


def test_the_conftest_logs_a_mutants_failing_test_and_nothing_else(tmp_path: Path) -> None:
    """tests/conftest.py appends the failing test of a mutant's run to the kill log; passing
    tests, and failures in mutmut's own phases (stats, clean run, forced failure), are not logged."""
    import subprocess

    (tmp_path / "conftest.py").write_text((ROOT / "tests" / "conftest.py").read_text())
    (tmp_path / "test_probe.py").write_text("def test_ok():\n    pass\n\n"
                                            "def test_bad():\n    assert 1 == 2, 'wrong'\n")
    log = tmp_path / "kills.jsonl"
    for mutant in ("fail", "", "pkg.mod.x_f__mutmut_3"):
        env = {**os.environ, "STORMPY_MUTATION_KILL_LOG": str(log), "MUTANT_UNDER_TEST": mutant}
        subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tmp_path)],
                       env=env, cwd=tmp_path, capture_output=True, timeout=120)
    (record,) = [json.loads(line) for line in log.read_text().splitlines()]
    assert record["mutant"] == "pkg.mod.x_f__mutmut_3" and record["when"] == "call"
    assert record["test"].endswith("test_probe.py::test_bad") and "wrong" in record["error"]


def test_mutation_runs_cap_every_wait_of_the_testing_kit() -> None:
    """tools/mutate.py runs mutmut with STORMPY_TEST_WAIT_CAP; tests/conftest.py then caps the
    timeout of every testing-kit wait, so a broken mutant fails its test within the cap; a wait
    handed its own (driven) clock keeps its timeout."""
    import subprocess

    script = """
import importlib.util, sys
spec = importlib.util.spec_from_file_location("capped_conftest", sys.argv[1])
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
import stormpy.host.waiting, stormpy.local._cluster, stormpy.testing
for wait_for in (stormpy.testing.wait_for, stormpy.host.waiting.wait_for, stormpy.local._cluster.wait_for):
    try:
        wait_for(lambda: False, 30, "nothing")
    except stormpy.testing.WaitTimeout as exc:
        print(exc)
print(stormpy.local._cluster.LocalCluster.wait_until_quiet.__qualname__)
now = [0.0]
def driven_sleep(secs):
    now[0] += secs
try:  # a wait on a driven clock of its own is not capped: it runs its whole (driven) timeout
    stormpy.host.waiting.wait_for(lambda: False, 30, "driven", interval=10, clock=lambda: now[0],
                                  sleep=driven_sleep)
except stormpy.testing.WaitTimeout as exc:
    print(exc, now[0])
"""
    env = {**os.environ, "STORMPY_TEST_WAIT_CAP": "0.05"}
    out = subprocess.run([sys.executable, "-c", script, str(ROOT / "tests" / "conftest.py")], env=env,
                         capture_output=True, text=True, timeout=60, check=True).stdout.splitlines()
    assert out == ["timed out after 0.05s waiting for nothing"] * 3 + [
        "_cap_local_waits.<locals>.wait_until_quiet", "timed out after 30s waiting for driven 30.0"]
    assert tool_module().mutation_env()["STORMPY_TEST_WAIT_CAP"] == str(tool_module().WAIT_CAP_SECS)


def tool_module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("mutate_tool_env", ROOT / "tools" / "mutate.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def load_real_tool(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    spec = importlib.util.spec_from_file_location("mutate_tool_targets", ROOT / "tools" / "mutate.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, module)
    spec.loader.exec_module(module)
    return module


def test_every_target_pattern_still_names_a_file(monkeypatch: pytest.MonkeyPatch) -> None:
    """A module renamed or moved (``state/kv.py`` to ``state/_kv.py``, a test file to
    ``tests/unit/<package>/``) must not silently drop out of its target: every source pattern of
    every target matches a source file, and every test pattern a test file."""
    tool = load_real_tool(monkeypatch)
    sources = [p.relative_to(ROOT).as_posix() for p in (ROOT / "src").rglob("*.py")]
    for name, target in tool.TARGETS.items():
        for pattern in target.mutate:
            assert any(fnmatch.fnmatch(rel, pattern) for rel in sources), \
                f"{name}: {pattern} matches no source"
        for pattern in target.tests:
            assert any(ROOT.glob(pattern)), f"{name}: {pattern} matches no test"


def test_every_listed_equivalent_is_a_mutant_of_a_target_file(monkeypatch: pytest.MonkeyPatch) -> None:
    """An accepted equivalent whose module was renamed names no mutant any more: it would never
    count, and the mutant it stood for would be reported as a survivor."""
    tool = load_real_tool(monkeypatch)
    files = {rel for target in tool.TARGETS.values() for rel in tool.source_files(target)}
    orphans = [name for name in tool.equivalents() if not any(tool.in_file(name, rel) for rel in files)]
    assert not orphans, f"equivalents of no target's file: {orphans[:5]}"


def test_run_passes_the_named_mutants_to_mutmut_for_one_target(tool: ModuleType,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple[str, ...]] = []
    monkeypatch.setattr(tool, "call_mutmut", lambda work, log, *args: calls.append(args) or 0)
    monkeypatch.setattr(tool, "summary", lambda names: None)
    assert tool.main(["run", "ledger", "--children", "1", "--mutants", FAIL_8, "*init*"]) == 0
    assert calls == [("--max-children", "1", FAIL_8, "*init*")]
    monkeypatch.setattr(tool, "TARGETS", {"ledger": tool.Target((LEDGER,)), "other": tool.Target((LEDGER,))})
    with pytest.raises(SystemExit):
        tool.main(["run", "ledger", "other", "--mutants", FAIL_8])


def test_uncovered_lists_by_package_the_files_no_target_mutates(tool: ModuleType,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tool, "TARGETS", {"acker": tool.Target((LEDGER,))})
    gaps = tool.uncovered_files()
    acker = dict(gaps["stormpy.acker"])
    assert LEDGER not in acker and "src/stormpy/acker/__init__.py" not in acker
    core = "src/stormpy/acker/core.py"
    assert acker[core] == len((ROOT / core).read_text().splitlines())
    assert "src/stormpy/_settings.py" in dict(gaps["stormpy"])  # a top-level module
    assert all(rel.startswith(f"src/{package.replace('.', '/')}/") for package, files in gaps.items()
               if package != "stormpy" for rel, _ in files)
