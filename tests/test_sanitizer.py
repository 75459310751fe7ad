"""The sanitizer oracle (``memory-error``) and ``optfuzz fuzz --build sanitize``: report
parsing on real report formats, and campaigns on the fake target whose ``double-free`` pass
frees a heap block twice (ASan's interceptors see it; without them glibc aborts)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from fuzzer.builds.kinds import runtime_library
from oracles import judge
from oracles.base import Outcome
from oracles.sanitizer import parse_report
from tests.test_cli_check import assert_one_line_error, optfuzz

REPORTS = Path(__file__).parent / "data" / "sanitizer"
ASAN = (REPORTS / "asan_heap_use_after_free.txt").read_text()
UBSAN = (REPORTS / "ubsan_signed_overflow.txt").read_text()

HAS_ASAN = runtime_library("libasan.so") is not None
needs_asan = pytest.mark.skipif(not HAS_ASAN, reason="GCC's ASan runtime is not installed")


def test_asan_report_names_the_first_frame_in_the_pass_sources():
    facts = parse_report(ASAN)
    assert facts["tool"] == "AddressSanitizer" and facts["kind"] == "heap-use-after-free"
    assert facts["function"] == "onnx::optimization::FuseBNIntoConv::modify_conv"
    assert (facts["file"], facts["line"]) == ("fuse_bn_into_conv.h", 88)


def test_ubsan_report_keeps_its_own_site_and_drops_the_values():
    facts = parse_report(UBSAN)
    assert facts["tool"] == "UndefinedBehaviorSanitizer"
    assert facts["kind"] == "signed integer overflow"
    assert (facts["file"], facts["line"]) == ("fuse_pad_into_conv.h", 121)
    assert facts["function"] == "onnx::optimization::FusePadIntoConv::runTransform"


def test_only_a_report_during_optimize_is_a_memory_error():
    halted = Outcome("sanitizer", "optimize", extra={"sanitizer_report": ASAN})
    found = judge(halted)
    assert [f.symptom for f in found] == ["memory-error"]  # not also optimizer-abort
    assert found[0].message == ("AddressSanitizer: heap-use-after-free in onnx::optimization::"
                                "FuseBNIntoConv::modify_conv (fuse_bn_into_conv.h:88)")
    assert found[0].detail["site"] == \
        "heap-use-after-free onnx::optimization::FuseBNIntoConv::modify_conv"
    # the same error in another process: the same root-cause core, whatever the addresses
    other = ASAN.replace("4242", "77").replace("0x602000000010", "0x603000000fff")
    assert judge(Outcome("sanitizer", "optimize",
                         extra={"sanitizer_report": other}))[0].detail["site"] == \
        found[0].detail["site"]
    in_onnxruntime = judge(Outcome("sanitizer", "execute", extra={"sanitizer_report": ASAN}))
    assert [f.symptom for f in in_onnxruntime] == ["runtime-failure"]
    assert judge(Outcome("signal", "optimize", signal=6))[0].symptom == "optimizer-abort"


def fuzz(out, *more: str) -> subprocess.CompletedProcess:
    return optfuzz("fuzz", "--target", "fake", "--passes", "double-free,clean", "--source",
                   "generated", "--max-cases", "60", "--out", str(out), "--quiet",
                   "--reduce-seconds", "30", *more)


def bundles(out) -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted(out.glob("*/meta.json"))]


@needs_asan
def test_sanitize_campaign_bundles_a_memory_error_that_its_repro_shows(tmp_path):
    out = tmp_path / "crashes"
    proc = fuzz(out, "--build", "sanitize")
    assert proc.returncode == 0, proc.stderr[-2000:]
    found = bundles(out)
    assert [m["symptom"] for m in found] == ["memory-error"], found
    meta = found[0]
    assert meta["responsible_passes"] == ["double-free"]
    assert meta["message"].startswith("AddressSanitizer: attempting double-free")
    assert meta["nodes"]["minimized"] == 1  # the one Exp node the pass needs
    folder = out / meta["id"]
    assert "==ERROR: AddressSanitizer" in (folder / "report.md").read_text()
    repro = subprocess.run([sys.executable, "repro.py"], cwd=folder, capture_output=True,
                           text=True, timeout=300)
    assert repro.returncode == 1, repro.stdout + repro.stderr
    assert "observed: memory-error" in repro.stdout
    fixed = subprocess.run([sys.executable, "repro.py"], cwd=folder, capture_output=True,
                           text=True, timeout=300,
                           env={**os.environ, "OPTFUZZ_FAKE_FIXED": "double-free"})
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr  # the fixed release: no report
    # replay runs it under the sanitizer too: still failing, and fixed once it is
    replay = optfuzz("replay", str(out))
    assert replay.returncode == 1 and "still fails" in replay.stdout, replay.stdout
    assert json.loads((folder / "meta.json").read_text())["replay"]["status"] == "fails"
    # the same campaign without the sanitizer: glibc's own check aborts the worker, and
    # the crash runs once more on the sanitizer runtime for its crash state
    plain = fuzz(tmp_path / "plain", "--crash-states")
    assert plain.returncode == 0, plain.stderr[-2000:]
    (meta,) = bundles(tmp_path / "plain")
    assert meta["symptom"] == "optimizer-abort" and meta["breaking_pass"] == "double-free"
    state = meta["crash_state"]
    assert (state["tool"], state["kind"]) == ("AddressSanitizer", "attempting double-free")
    assert state["frames"] and meta["root_cause"] == \
        f"fake|(crash state)|crash|attempting double-free in {' < '.join(state['frames'])}"
    report = (tmp_path / "plain" / meta["id"] / "report.md").read_text()
    assert "## Crash state" in report and state["frames"][0] in report
    assert report.startswith("# fake: double-free fails: attempting double-free in ")


@pytest.mark.parametrize("args, words", [
    (["--build", "bogus"], "unknown build 'bogus'"),
    (["--build", "sanitize", "--ray"], "--build sanitize runs locally"),
    (["--build", "sanitize", "--guided"], "--build sanitize runs locally"),
    (["--crash-states", "--guided"], "--crash-states runs unguided"),
])
def test_bad_build_options_are_refused_in_one_line(tmp_path, args, words):
    proc = fuzz(tmp_path / "out", *args)
    assert_one_line_error(proc)
    assert words in proc.stderr


def test_a_missing_sanitize_build_names_the_command_that_makes_it(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "fuzzer", "fuzz", "--target", "onnxoptimizer", "--build",
         "sanitize", "--max-cases", "5", "--out", str(tmp_path / "out"), "--quiet"],
        capture_output=True, text=True, timeout=300,
        env={**os.environ, "OPTFUZZ_CACHE_DIR": str(tmp_path / "cache")})
    assert_one_line_error(proc)
    assert "optfuzz target build onnxoptimizer --sanitize" in proc.stderr


def test_processes_a_sanitized_worker_starts_run_without_the_runtime(tmp_path):
    from fuzzer.builds.sanitizer import sanitizer_runtime, without_runtime

    if not HAS_ASAN:
        pytest.skip("GCC's ASan runtime is not installed")
    runtime = sanitizer_runtime(None, str(tmp_path))
    worker_env = {**runtime.env, "PATH": "/usr/bin", "HOME": "/root"}
    assert "LD_PRELOAD" in worker_env and str(tmp_path) in worker_env["ASAN_OPTIONS"]
    assert without_runtime(worker_env) == {"PATH": "/usr/bin", "HOME": "/root"}
    script = (tmp_path / "python").read_text()  # the wrapper a worker is spawned through
    assert "export LD_PRELOAD=" in script and script.rstrip().endswith('"$@"')


def test_a_ubsan_report_is_found_in_the_error_output_it_goes_to():
    from oracles.sanitizer import report_in

    noise = "onnxruntime warning: something\nfree(): nothing\n"
    assert report_in(noise) is None and report_in(None) is None
    found = report_in(noise + UBSAN)
    assert found is not None and found.startswith("/cache/src/onnxoptimizer/passes/")
    assert parse_report(found)["kind"] == "signed integer overflow"
    assert report_in(noise + ASAN).startswith("==4242==ERROR: AddressSanitizer")


@needs_asan
def test_a_sanitize_campaign_resumes_only_as_one(tmp_path):
    out = tmp_path / "crashes"
    first = optfuzz("fuzz", "--target", "fake", "--passes", "clean", "--source", "generated",
                    "--max-cases", "10", "--out", str(out), "--quiet", "--build", "sanitize")
    assert first.returncode == 0, first.stderr[-2000:]
    plain = optfuzz("fuzz", "--target", "fake", "--passes", "clean", "--source", "generated",
                    "--max-cases", "10", "--out", str(out), "--quiet", "--resume")
    assert_one_line_error(plain)
    assert "build" in plain.stderr


def test_a_template_function_is_one_root_cause_whatever_its_type():
    report = (REPORTS / "ubsan_null_argument.txt").read_text()
    longs = judge(Outcome("sanitizer", "optimize", extra={"sanitizer_report": report}))[0]
    floats = judge(Outcome("sanitizer", "optimize", extra={
        "sanitizer_report": report.replace("long", "float")}))[0]
    assert longs.message == ("UndefinedBehaviorSanitizer: null pointer passed as argument N, "
                             "which is declared to never be null in "
                             "onnx::optimization::ParseTensorData<long> (tensor_util.cc:74)")
    assert longs.detail["site"] == floats.detail["site"] == (
        "null pointer passed as argument N, which is declared to never be null "
        "onnx::optimization::ParseTensorData")



@needs_asan
def test_one_memory_fault_reached_from_two_passes_is_one_bundle_by_its_crash_state(tmp_path):
    from fuzzer.execution.sandbox import Sandbox
    from fuzzer.handling.crash_state import CrashWitness
    from fuzzer.handling.outcome import FindingPolicy
    from fuzzer.handling.record import handle_finding
    from fuzzer.store.folder import BundleStore
    from fuzzer.targets import get_target
    from tests.localize_models import chain, fake_case, fillers

    model = chain(["Neg", "Exp"])
    cases = [fake_case(model, fillers({4: bug})) for bug in ("double-free", "double-free-b")]
    witness = CrashWitness.for_target(get_target("fake"), 60.0)
    try:
        with Sandbox(jobs=1, timeout=30.0) as box:
            def ids(policy, folder):
                store = BundleStore(folder)
                for case in cases:
                    handle_finding(store, box, case, box.run(case), "1.0", policy)
                return {i: store.meta(i) for i in store.ids()}

            plain = ids(FindingPolicy(reduce_seconds=0, verify=False), tmp_path / "plain")
            states = ids(FindingPolicy(reduce_seconds=0, verify=False, witness=witness),
                         tmp_path / "states")
            # re-bucketing the plain folder with crash states merges its two bundles
            from fuzzer.triage.rebucket import rebucket

            store = BundleStore(tmp_path / "plain")
            rebucket(store, box, lambda line: None, lambda name: witness)
            (merged,) = [store.meta(i) for i in store.ids()]
    finally:
        witness.close()
    assert sorted(m.breaking_pass for m in plain.values()) == ["double-free", "double-free-b"]
    (meta,) = states.values()
    assert meta.hits == 2, meta  # the second pass's crash joined the first's bundle
    assert {k.split("|")[1] for k in meta.extra["preliminary_keys"]} == \
        {"double-free", "double-free-b"}
    assert meta.extra["crash_state"]["kind"] == "attempting double-free"
    assert (merged.root_cause, merged.hits) == (meta.root_cause, 2)
    assert merged.extra["crash_state"]["frames"] == meta.extra["crash_state"]["frames"]


@needs_asan
def test_the_last_release_restores_the_interpreter_spawn_used_and_spawn_still_works(tmp_path):
    """multiprocessing gives its spawn executable back as bytes; the one restored must be
    the same path (its ``str()``, "b'/...'", named no file: every later spawned process of
    the campaign or test process died at its start with status 255)."""
    import multiprocessing

    from fuzzer.builds.sanitizer import release, sanitizer_runtime

    before = multiprocessing.spawn.get_executable()
    runtime = sanitizer_runtime(None, str(tmp_path / "runtime"))
    runtime.install()
    assert os.fsdecode(multiprocessing.spawn.get_executable()) == runtime.python
    release()
    assert os.fsdecode(multiprocessing.spawn.get_executable()) == os.fsdecode(before)
    child = multiprocessing.get_context("spawn").Process(target=os.getpid)
    child.start()
    child.join(60)
    assert child.exitcode == 0


def test_each_sanitizer_runtime_in_one_process_gets_its_own_fork_server():
    """multiprocessing keeps one fork server per process, with the environment it started
    under: a runtime's workers must neither start unsanitized from a server started before
    it nor report into another runtime's folder."""
    from fuzzer.execution.sandbox import Sandbox
    from fuzzer.handling.crash_state import CrashWitness
    from fuzzer.targets import get_target
    from tests.localize_models import chain, fake_case, fillers

    case = fake_case(chain(["Neg", "Exp"]), fillers({4: "double-free"}))
    with Sandbox(jobs=1, timeout=30.0, start_method="forkserver") as plain:
        plain.run(case)  # a fork server without the sanitizer runtime, started first
    folders = []
    for _ in range(2):
        witness = CrashWitness.for_target(get_target("fake"), 60.0)
        folders.append(witness.runtime.folder)
        try:
            state = witness.state(case)
        finally:
            witness.close()
        assert state is not None and state.kind == "attempting double-free"
    assert folders[0] != folders[1]
