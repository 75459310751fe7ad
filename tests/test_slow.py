"""``slow``: the growth judgement, the scaling of repeated blocks, and the planted quadratic
and linear fake passes timed for real in a worker (the quadratic one is a finding, the
linear one is not), then localized, scaled down and bundled by ``optfuzz check --save``."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from fuzzer.execution.case import TestCase
from fuzzer.execution.sandbox import Sandbox
from fuzzer.modelio.repeat import MIN_BLOCKS, find_run, rescale
from oracles.base import Finding
from oracles.slow import EXPONENT, MIN_TIMED, judge_growth
from tests.test_cli_check import optfuzz


def relu_chain(nodes: int, op: str = "Relu") -> onnx.ModelProto:
    """x -> op -> op -> ... -> y, ``nodes`` nodes, float32 [1, 8]."""
    names = ["x"] + [f"t{i}" for i in range(1, nodes)] + ["y"]
    graph = helper.make_graph(
        [helper.make_node(op, [names[i]], [names[i + 1]]) for i in range(nodes)], "chain",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def layer_stack(layers: int) -> onnx.ModelProto:
    """x -> [MatMul(own weight) -> Add(shared bias) -> Relu] * layers -> Add(x) -> y."""
    nodes, inits, prev = [], [numpy_helper.from_array(np.full(4, 0.1, np.float32), "bias")], "x"
    for i in range(layers):
        inits.append(numpy_helper.from_array(np.eye(4, dtype=np.float32) * 0.5, f"w{i}"))
        nodes += [helper.make_node("MatMul", [prev, f"w{i}"], [f"m{i}"], name=f"mm{i}"),
                  helper.make_node("Add", [f"m{i}", "bias"], [f"a{i}"]),
                  helper.make_node("Relu", [f"a{i}"], [f"r{i}"])]
        prev = f"r{i}"
    nodes.append(helper.make_node("Add", [prev, "x"], ["y"]))
    graph = helper.make_graph(
        nodes, "stack", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def series(nodes: list[int], times: list[list[float]], power: float = 1.0) -> list[dict]:
    """A timing series; the reference grows as ``nodes ** power`` from 1 ms at the first."""
    return [{"nodes": n, "blocks": n, "optimize_s": t,
             "reference_s": [0.001 * (n / nodes[0]) ** power] * len(t)}
            for n, t in zip(nodes, times, strict=True)]


# --- the judgement (synthetic timings: no clock involved) ---------------------------------


def test_quadratic_growth_is_slow_and_linear_growth_is_not():
    sizes = [500, 1000, 2000]
    quadratic = judge_growth(series(sizes, [[0.1] * 3, [0.4] * 3, [1.6] * 3]))
    assert quadratic is not None and quadratic.symptom == "slow"
    assert quadratic.detail["exponent"] == pytest.approx(2.0)
    assert [r["nodes"] for r in quadratic.detail["table"]] == sizes
    assert judge_growth(series(sizes, [[0.1] * 3, [0.2] * 3, [0.4] * 3])) is None


def test_growth_within_noise_too_fast_or_matched_by_the_reference_is_not_slow():
    sizes = [500, 1000, 2000]
    noisy = [[0.1, 0.25, 0.25], [0.4, 0.9, 0.9], [0.9, 2.7, 2.7]]  # x2.25 beyond linear,
    # within repeats that spread x2.5 and x3
    assert judge_growth(series(sizes, noisy)) is None
    tiny = [[MIN_TIMED / 10] * 3, [MIN_TIMED / 2.5] * 3, [MIN_TIMED * 1.6] * 3]
    assert judge_growth(series(sizes, tiny)) is None
    model_work = series(sizes, [[0.1] * 3, [0.4] * 3, [1.6] * 3], power=2.0)
    assert judge_growth(model_work) is None
    assert judge_growth(series(sizes[:2], [[0.1] * 3, [0.4] * 3])) is None  # two sizes


def test_growth_in_the_no_pass_baseline_alone_is_the_framework():
    rows = series([500, 1000, 2000], [[0.11] * 3, [0.42] * 3, [1.62] * 3])
    for row, base in zip(rows, (0.1, 0.4, 1.6), strict=True):
        row["baseline_s"] = [base] * 3  # the passes add a constant 10-20 ms
    assert judge_growth(rows).detail["growth"] == "framework"
    for row, base in zip(rows, (0.01, 0.02, 0.04), strict=True):
        row["baseline_s"] = [base] * 3
    assert judge_growth(rows).detail["growth"] == "passes"
    assert judge_growth(rows).detail["added_exponent"] == pytest.approx(2.0, abs=0.05)


def test_a_total_growth_that_neither_the_passes_nor_the_baseline_shows_alone_is_no_finding():
    # A campaign's timing of eliminate_nop_cast on a run of Reshape nodes (no Cast): the
    # total grows as nodes^2.3 because onnxoptimizer's own load and save does, disturbed at
    # the largest size; the pass adds -11, 68 and 32 ms.
    rows = [{"nodes": n, "blocks": n - 11, "optimize_s": [t], "baseline_s": [b],
             "reference_s": [r]}
            for n, t, b, r in ((523, 0.0169, 0.0284, 0.0210), (1035, 0.1176, 0.0498, 0.0298),
                               (2059, 0.4081, 0.3762, 0.0541))]
    assert judge_growth([{k: v for k, v in r.items() if k != "baseline_s"} for r in rows])
    assert judge_growth(rows) is None


def test_an_added_time_within_the_spread_of_the_repeats_is_not_a_pass_growing():
    """A filler pass timed on a loaded machine: the baseline's quiet repeat at each size
    sits below every repeat of the pass list, so the minima differ by 12, 60 and 320 ms and
    that difference grows as nodes^2.4; but the baseline's own repeats spread further. The
    same minima with repeats that agree are a finding."""
    def rows(spread: bool) -> list[dict]:
        out = []
        for n, t, b in ((1500, 0.062, 0.05), (3000, 0.16, 0.10), (6000, 0.52, 0.20)):
            jitter = t - b + 0.01 if spread else 0.0
            out.append({"nodes": n, "blocks": n - 1, "reference_s": [n / 1e5] * 3,
                        "optimize_s": [t, t * 1.01, t * 1.02],
                        "baseline_s": [b, b + jitter, b + jitter * 1.1]})
        return out

    assert judge_growth(rows(spread=True)) is None
    found = judge_growth(rows(spread=False))
    assert found is not None and found.detail["growth"] == "passes"


def test_a_slow_repro_times_the_same_call_with_no_pass():
    from fuzzer.report.repro import render_repro

    with_passes = render_repro("b", "slow", "fake", {"passes": ["slow-quadratic"]}, "1", 60)
    namespace: dict = {}
    exec(compile(with_passes, "repro.py", "exec"), namespace)
    assert callable(namespace["optimize_without_passes"])
    assert "optimize_without_passes(model)" in with_passes
    no_pass = render_repro("b", "slow", "fake", {"passes": []}, "1", 60)
    namespace = {}
    exec(compile(no_pass, "repro.py", "exec"), namespace)
    assert namespace["optimize_without_passes"] is None
    assert "optimize_without_passes" not in render_repro("b", "optimizer-error", "fake",
                                                         {"passes": ["clean"]}, "1", 60)


@pytest.mark.parametrize(("symptom", "verdicts", "runs", "code"), [
    ("slow", [False, True, True], 3, 1),   # a timing symptom: the majority of three
    ("slow", [True, False, False], 3, 0),
    ("slow", [True, True], 2, 1),          # two agreeing runs decide
    ("optimizer-error", [False, True, True], 1, 0),  # one run decides the others
])
def test_repro_takes_a_timing_symptoms_verdict_by_majority(symptom, verdicts, runs, code):
    from fuzzer.report.repro import render_repro

    namespace: dict = {}
    exec(compile(render_repro("b", symptom, "fake", {"passes": ["clean"]}, "1", 60),
                 "repro.py", "exec"), namespace)
    script = iter(verdicts)
    seen: list[bool] = []
    namespace["trial"] = lambda: seen.append(next(script)) or seen[-1]
    with pytest.raises(SystemExit) as exited:
        namespace["parent"]()
    assert (exited.value.code, len(seen)) == (code, runs)


# --- scaling a model ------------------------------------------------------------------------


def test_a_chain_scales_to_any_length_with_the_same_interface():
    model = relu_chain(40)
    run = find_run(model.graph)
    assert run is not None and run.period == 1 and run.count == 39
    for count in (1, 5, 200):
        scaled = rescale(model, run, count)
        onnx.checker.check_model(scaled, full_check=True)
        assert len(scaled.graph.node) == count + 1
        assert [o.name for o in scaled.graph.output] == ["y"]
        assert [i.name for i in scaled.graph.input] == ["x"]


def test_a_layer_stack_scales_with_own_weights_per_layer_and_keeps_its_outputs():
    model = layer_stack(6)
    run = find_run(model.graph)
    assert run is not None and run.period == 3 and run.count >= MIN_BLOCKS
    feeds = {"x": np.random.default_rng(0).random((2, 4), dtype=np.float32)}

    def outputs(m: onnx.ModelProto) -> np.ndarray:
        return ort.InferenceSession(m.SerializeToString(),
                                    providers=["CPUExecutionProvider"]).run(None, feeds)[0]

    same = rescale(model, run, run.count)
    np.testing.assert_array_equal(outputs(same), outputs(model))
    bigger = rescale(model, run, run.count * 2)
    onnx.checker.check_model(bigger, full_check=True)
    assert len(bigger.graph.node) == len(model.graph.node) + 3 * run.count
    weights = {n.input[1] for n in bigger.graph.node if n.op_type == "MatMul"}
    assert len(weights) == sum(n.op_type == "MatMul" for n in bigger.graph.node)
    assert find_run(layer_stack(2).graph) is None  # too few blocks to halve


# --- planted passes, timed for real ---------------------------------------------------------


@pytest.fixture(scope="module")
def box() -> Sandbox:
    with Sandbox(jobs=1, timeout=120.0) as sandbox:
        yield sandbox


def timed(box: Sandbox, passes: list[str], nodes: int):
    case = TestCase("fake", {"passes": passes, "fixed_point": False}, {"kind": "bytes"},
                    model_bytes=relu_chain(nodes).SerializeToString(), growth=True)
    return box.run(case)


@pytest.mark.slow
def test_the_planted_quadratic_pass_is_slow_and_the_linear_one_is_not(box):
    # 2,200 nodes let the probe's sizes reach 2,048 blocks, where the quadratic pass takes
    # about 4 times MIN_TIMED's margin; on 1,100 the only size it could take was 1,024,
    # right at that margin, and a faster or slower CPU moment left the series out
    quadratic = timed(box, ["slow-quadratic"], 2200)
    slow = [f for f in quadratic.findings if f.symptom == "slow"]
    assert slow, quadratic
    assert slow[0].detail["exponent"] >= EXPONENT and slow[0].detail["growth"] == "passes"
    assert len(slow[0].detail["table"]) == 3
    linear = timed(box, ["slow-linear"], 2200)
    assert not [f for f in linear.findings if f.symptom == "slow"], linear.findings


@pytest.mark.slow
def test_the_scale_down_at_hand_stops_at_the_campaigns_cutoff(box):
    from fuzzer.handling.growth import scale_down
    from fuzzer.reduce.predicate import Cutoff

    case = TestCase("fake", {"passes": ["slow-quadratic"], "fixed_point": False},
                    {"kind": "bytes"}, model_bytes=relu_chain(1100).SerializeToString(),
                    growth=True, keep=True)
    result = box.run(case)  # keep=True: its artifacts hold the found model
    # the finding at hand is built, not measured: this test is about the cutoff, and a
    # timing on a loaded machine need not show the growth (the planted-pass test does)
    slow = Finding("slow", "optimize", "optimize time grows as nodes^2.0",
                   {"growth": "passes", "exponent": 2.0})
    runs: list[TestCase] = []

    class Counting:  # the sandbox, counting the runs of the scale-down
        def run(self, asked: TestCase, *args, **kwargs):
            runs.append(asked)
            return box.run(asked, *args, **kwargs)

        def __getattr__(self, name: str):
            return getattr(box, name)

    cutoff = Cutoff()
    cutoff.cut()  # the campaign's grace period ended while the finding was at hand
    kept_case, _, kept = scale_down(Counting(), case, result, slow, 120.0, cutoff)
    assert runs == [] and kept_case.model_bytes == case.model_bytes and kept is slow
    scale_down(Counting(), case, result, slow, 120.0, Cutoff())  # uncut: it tries forms
    assert runs and all(len(r.model_bytes) < len(case.model_bytes) for r in runs)


def test_unasked_probes_keep_their_share_across_replaced_workers(monkeypatch):
    """Every run is made suspicious; each case runs in a fresh worker (``max_tasks=1``).
    The share is the sandbox's, not each worker's: only the first case probes, where a
    per-process account would let every fresh worker probe at once (and leave the
    sandbox's at 0)."""
    from oracles import slow as slow_oracle

    monkeypatch.setattr(slow_oracle, "SUSPECT_SECONDS", 0.0)  # inherited by forked workers
    monkeypatch.setattr(slow_oracle, "SUSPECT_RATIO", 0.0)
    probed = []
    with Sandbox(jobs=1, timeout=120.0, max_tasks=1) as sandbox:
        for _ in range(4):
            before = sandbox.probes.spent
            case = TestCase("fake", {"passes": ["slow-linear"], "fixed_point": False},
                            {"kind": "bytes"}, model_bytes=relu_chain(1100).SerializeToString())
            assert sandbox.run(case).unusable is None
            probed.append(sandbox.probes.spent > before)
    assert probed[0] and sum(probed) == 1, probed


@pytest.mark.slow
def test_check_localizes_scales_down_and_bundles_the_quadratic_pass(tmp_path):
    model = tmp_path / "chain.onnx"
    onnx.save(relu_chain(6000), model)
    out = tmp_path / "crashes"
    proc = optfuzz("check", str(model), "--target", "fake", "--passes",
                   "clean,slow-quadratic,nop-1", "--timeout", "120", "--save", str(out))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "slow (optimize)" in proc.stdout and "no pass (s)" in proc.stdout
    bundles = [p for p in out.iterdir() if p.is_dir() and not p.name.startswith(".")]
    assert len(bundles) == 1, proc.stdout  # "no bundle: <why>" otherwise
    meta = json.loads((bundles[0] / "meta.json").read_text())
    bundle = bundles[0]
    assert meta["symptom"] == "slow" and meta["breaking_pass"] == "slow-quadratic"
    assert meta["responsible_passes"] == ["slow-quadratic"]
    assert meta["nodes"]["minimized"] < meta["nodes"]["original"] == 6000
    table = meta["timing"]["table"]
    assert len(table) == 3 and all((bundle / "scaling" / f"{r['nodes']}.onnx").is_file()
                                   for r in table)
    assert meta["timing"]["growth"] == "passes" and meta["timing"]["added_exponent"] >= EXPONENT
    report = (bundle / "report.md").read_text()
    assert "## Timing" in report and "passes add (s)" in report
    # repro.py takes a timing symptom's verdict as the majority of VOTES timed series, as
    # the bundle's verification took it (one series, timed beside a CPU hog and another
    # test worker, once came out flat)
    run = subprocess.run([sys.executable, "repro.py"], cwd=bundle, capture_output=True,
                         text=True, timeout=900)
    assert run.returncode == 1, run.stdout + run.stderr
    assert "verdict, majority of up to 3 runs: reproduced" in run.stdout
    linear = optfuzz("check", str(model), "--target", "fake", "--passes", "slow-linear")
    assert linear.returncode == 0, linear.stdout + linear.stderr


# --- a campaign's generated case that asks for the probe --------------------------------------


def asking_case(seed: int) -> TestCase:
    """A generated case as the campaign stream makes one in GROWTH_ONE_IN: the block-run
    motif, the probe asked up to a node count (4,096 here: the fake target's quadratic pass
    shows at that size in a fraction of the time GROWTH_NODES would take). The pass runs
    twice: once, it takes about 0.03 s at the largest size the probe's search may time (a
    quarter of 4,096 nodes), right at the search's threshold (3 x MIN_TIMED), so whether the
    probe times anything would hang on the machine's noise; twice, it takes twice that."""
    from fuzzer.campaign.stream import GROWTH_MOTIF

    source = {"kind": "generated", "seed": seed, "generator": "v2",
              "with_motifs": [GROWTH_MOTIF]}
    return TestCase("fake", {"passes": ["slow-quadratic"] * 2, "fixed_point": False}, source,
                    input_seed=seed, growth=True, growth_nodes=4096)


def test_the_stream_asks_one_generated_case_in_growth_one_in_for_the_probe(monkeypatch):
    from fuzzer.campaign import stream as stream_module
    from fuzzer.campaign.stream import CaseStream, StreamConfig
    from fuzzer.targets import get_target

    def drawn() -> list[TestCase]:
        stream = CaseStream(StreamConfig("fake", 3), get_target("fake"))
        return [stream.draw(corpus_ok=False) for _ in range(50)]

    assert not any(c.growth or c.growth_nodes for c in drawn())
    monkeypatch.setattr(stream_module, "GROWTH_ONE_IN", 1)
    cases = drawn()
    assert all(c.growth and c.growth_nodes == stream_module.GROWTH_NODES for c in cases)
    assert all(c.source["with_motifs"] == [stream_module.GROWTH_MOTIF] for c in cases)


def test_the_block_run_motif_makes_a_run_of_alike_blocks_in_most_models():
    from generators import generate_model

    runs = [find_run(generate_model(seed, motifs=["block-run"]).model.graph)
            for seed in range(40)]
    assert sum(r is not None and r.count >= MIN_BLOCKS for r in runs) >= 24


@pytest.mark.slow
def test_a_generated_run_is_scaled_up_found_slow_and_trimmed_to_the_run(box):
    from fuzzer.execution.pipeline import materialize_case
    from fuzzer.handling.growth import TRIM_AT_LEAST, scale_down

    def around(seed: int) -> int:  # nodes outside the model's run (-1: no run)
        graph = materialize_case(asking_case(seed))[0].graph
        run = find_run(graph)
        return -1 if run is None else len(graph.node) - run.count * run.period

    seed = next(s for s in range(100) if around(s) >= TRIM_AT_LEAST)
    case = asking_case(seed)
    model = materialize_case(case)[0]
    result = box.run(dataclasses.replace(case, keep=True))
    (slow,) = [f for f in result.findings if f.symptom == "slow"]
    assert slow.detail["table"][-1]["nodes"] > 4 * len(model.graph.node)  # scaled up
    smaller, run, again = scale_down(box, case, result, slow, 120.0)
    kept = onnx.load_from_string(smaller.model_bytes)
    assert again.symptom == "slow" and run.artifacts is not None
    assert len(kept.graph.node) < len(model.graph.node)
    assert find_run(kept.graph) is not None
