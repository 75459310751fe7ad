"""Ground truth for "one bundle per fault" on the fake target's planted faults (design.md,
"Root causes"):

* ``rank0-shape`` writes a wrong shape into value_info that vanishes when saved (no element
  type declared) and ``trust-shape`` trips over it: the culprit search blames the first, on a
  typed copy, and names the second as the pass that exposed it;
* ``drop-transpose`` is one fault that shows as wrong outputs, an invalid model or a run-time
  failure depending on what reads its result: one bundle, three symptoms counted;
* ``bad-unary`` holds two faults with one symptom: two bundles;
* ``name-leak``'s message carries the model's own input name unquoted: one bundle whatever
  the name.
"""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from fuzzer.execution.case import TestCase
from fuzzer.execution.sandbox import Sandbox
from fuzzer.handling.outcome import FindingPolicy
from fuzzer.handling.record import handle_finding
from fuzzer.store.folder import BundleStore
from tests.localize_models import chain, fake_case, fillers

POLICY = FindingPolicy(localize=True, reduce_seconds=0, probe_seconds=0, verify=False)


@pytest.fixture(scope="module")
def sandbox():
    with Sandbox(jobs=2, timeout=10.0) as box:
        yield box


def handle(store: BundleStore, sandbox: Sandbox, case: TestCase, symptom: str) -> str:
    result = sandbox.run(case)
    assert [f.symptom for f in result.findings][:1] == [symptom], result.findings
    handled = handle_finding(store, sandbox, case, result, "1.0", POLICY)
    assert handled is not None and handled.bundle_id, handled
    return handled.bundle_id


def _model(nodes: list, inputs: list, outputs: list) -> bytes:
    graph = helper.make_graph(nodes, "g", inputs, outputs)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model.SerializeToString()


def _value(name: str, shape: list) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def test_the_pass_that_wrote_the_wrong_shape_is_blamed_not_the_one_that_trusted_it(
        sandbox, tmp_path):
    store = BundleStore(tmp_path)
    case = fake_case(chain(["Neg", "Exp"]), fillers({3: "rank0-shape", 20: "trust-shape"}))
    bid = handle(store, sandbox, case, "invalid-model")
    meta = store.meta(bid)
    assert meta.responsible_passes == ["rank0-shape", "trust-shape"]
    assert meta.breaking_pass == "rank0-shape"
    assert meta.exposed_by == "trust-shape"
    assert meta.enabling_passes == ["trust-shape"]
    assert meta.extra["culprit_staging"] == "typed"  # the plain intermediate hides it
    assert "rank" in meta.damage
    assert meta.root_cause.startswith("fake|rank0-shape|rewrite|")


def _transposed(tail: str) -> tuple[bytes, dict[str, np.ndarray]]:
    """x -> Transpose -> ``tail``: ``square`` (a Neg, outputs of one shape either way),
    ``declared`` (a Neg whose declared output shape only the transpose gives) or ``added``
    (an Add with another input of the transposed shape, dims unknown until run time)."""
    rng = np.random.default_rng(0)
    if tail == "square":
        nodes = [helper.make_node("Transpose", ["x"], ["t"], perm=[1, 0]),
                 helper.make_node("Neg", ["t"], ["y"])]
        model = _model(nodes, [_value("x", [2, 2])], [_value("y", [2, 2])])
        return model, {"x": rng.standard_normal((2, 2)).astype(np.float32)}
    if tail == "declared":
        nodes = [helper.make_node("Transpose", ["x"], ["t"], perm=[1, 0]),
                 helper.make_node("Neg", ["t"], ["y"])]
        model = _model(nodes, [_value("x", [2, 3])], [_value("y", [3, 2])])
        return model, {"x": rng.standard_normal((2, 3)).astype(np.float32)}
    nodes = [helper.make_node("Transpose", ["x"], ["t"], perm=[1, 0]),
             helper.make_node("Add", ["t", "z"], ["y"])]
    model = _model(nodes, [_value("x", ["N", "M"]), _value("z", ["M", "N"])],
                   [_value("y", ["M", "N"])])
    return model, {"x": rng.standard_normal((2, 3)).astype(np.float32),
                   "z": rng.standard_normal((3, 2)).astype(np.float32)}


def test_one_fault_with_three_symptoms_is_one_bundle(sandbox, tmp_path):
    store = BundleStore(tmp_path)
    seen = []
    for tail, symptom in (("declared", "invalid-model"), ("square", "output-mismatch"),
                          ("added", "runtime-failure")):
        model, feeds = _transposed(tail)
        case = TestCase("fake", {"passes": fillers({7: "drop-transpose"}), "fixed_point": False},
                        {"kind": "bytes"}, model_bytes=model, feeds=feeds)
        seen.append(handle(store, sandbox, case, symptom))
    assert len(set(seen)) == 1 and store.ids() == seen[:1]
    meta = store.meta(seen[0])
    assert meta.symptoms == {"invalid-model": 1, "output-mismatch": 1, "runtime-failure": 1}
    assert meta.hits == 3
    assert meta.worst_symptom() == "invalid-model"
    assert meta.root_cause == "fake|drop-transpose|rewrite|fp:-Transpose"


def test_two_faults_of_one_pass_with_one_symptom_are_two_bundles(sandbox, tmp_path):
    store = BundleStore(tmp_path)
    sin = handle(store, sandbox, fake_case(chain(["Sin"], tail="Add"), ["bad-unary"]),
                 "output-mismatch")
    exp = handle(store, sandbox, fake_case(chain(["Exp"], tail="Add"), ["bad-unary"]),
                 "output-mismatch")
    again = handle(store, sandbox, fake_case(chain(["Neg", "Sin"], prefix="/l/", tail="Add"),
                                             ["bad-unary"]), "output-mismatch")
    assert sin != exp and again == sin
    assert sorted(store.meta(b).root_cause.rsplit("|", 1)[1] for b in (sin, exp)) == \
        ["fp:-Exp", "fp:-Sin"]


def _renamed_input(name: str) -> bytes:
    model = onnx.load_model_from_string(chain(["Neg"]))
    model.graph.input[0].name = name
    model.graph.node[0].input[0] = name
    return model.SerializeToString()


def test_messages_that_carry_the_models_names_are_one_bundle(sandbox, tmp_path):
    store = BundleStore(tmp_path)
    bids = {handle(store, sandbox, fake_case(_renamed_input(name), ["name-leak"]),
                   "optimizer-error")
            for name in ("t8", "_v_8", "input.1", "weight", "onnx::Conv_12")}
    assert len(bids) == 1
    meta = store.meta(bids.pop())
    assert meta.hits == 5
    assert "init.cc:3: <name> in initializer but not in graph input" in meta.root_cause


def test_the_plainest_symptoms_model_becomes_the_bundles_own(sandbox, tmp_path):
    """Wrong outputs found first, then the same fault as an invalid model: the invalid
    model (an earlier stage, closer to the wrong rewrite) becomes the bundle's model.onnx
    and the wrong-output model a variant; nothing is lost and the hits add up."""
    store = BundleStore(tmp_path)
    seen = []
    for tail, symptom in (("square", "output-mismatch"), ("declared", "invalid-model"),
                          ("added", "runtime-failure")):
        model, feeds = _transposed(tail)
        case = TestCase("fake", {"passes": ["drop-transpose"], "fixed_point": False},
                        {"kind": "bytes"}, model_bytes=model, feeds=feeds)
        seen.append(handle(store, sandbox, case, symptom))
    assert len(set(seen)) == 1
    bid = seen[0]
    meta = store.meta(bid)
    assert (meta.symptom, meta.stage) == ("invalid-model", "validate")
    assert meta.symptoms == {"invalid-model": 1, "output-mismatch": 1, "runtime-failure": 1}
    assert meta.hits == 3 and meta.first_seen <= meta.last_seen
    square, _ = _transposed("square")
    declared, _ = _transposed("declared")
    folder = store.path(bid)
    assert (folder / "model.onnx").read_bytes() == declared
    assert (folder / meta.variants[0]).read_bytes() == square  # the old model, kept
    assert (folder / "variants" / "1.meta.json").is_file()


def _if_on_a_constant() -> bytes:
    """If on a constant False whose else branch reads the graph input ``x`` from the outer
    scope (a 20-minute onnxoptimizer 0.4.2 campaign's bundle, minimized)."""
    def branch(name: str, ops: list[str]) -> onnx.GraphProto:
        nodes, prev = [], "x"
        for index, op in enumerate(ops):
            nodes.append(helper.make_node(op, [prev], [f"{name}{index}"]))
            prev = f"{name}{index}"
        return helper.make_graph(nodes, name, [], [_value(prev, [2, 3])])

    cond = onnx.numpy_helper.from_array(np.array(False), "c")
    node = helper.make_node("If", ["c"], ["y"], then_branch=branch("then", ["Abs", "Identity"]),
                            else_branch=branch("else", ["Abs", "Sigmoid"]))
    graph = helper.make_graph([node], "g", [_value("x", [2, 3])], [_value("y", [2, 3])], [cond])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)])
    model.ir_version = 9
    onnx.checker.check_model(model, full_check=True)
    return model.SerializeToString()


#: the passes of the inlined-branch fault, the first at fault, the second exposing it.
INLINED = ["eliminate_if_with_const_cond", "rename_input_output"]


def _inlined_branch_verdict(sandbox: Sandbox, fixed_point: bool):
    """The culprit search's verdict on :func:`_if_on_a_constant` run through
    :data:`INLINED` (skips where the installed onnxoptimizer no longer breaks it)."""
    from fuzzer.localize.culprit import find_culprit

    case = TestCase("onnxoptimizer", {"passes": INLINED, "fixed_point": fixed_point},
                    {"kind": "bytes"}, model_bytes=_if_on_a_constant(),
                    feeds={"x": np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3)},
                    keep=True)
    run = sandbox.run(case)
    shown = [f for f in run.findings if f.symptom == "invalid-model"]
    if not shown:
        pytest.skip("this onnxoptimizer no longer breaks the inlined branch")
    return find_culprit(sandbox, case, shown[0], INLINED, run)


def test_damage_handed_over_in_memory_is_blamed_on_the_pass_that_left_it(sandbox):
    """eliminate_if_with_const_cond inlines the else branch, whose Abs still reads the
    branch's captured ``x``: saved, that is the graph input's name and the model is valid;
    in the same run rename_input_output renames the graph input and not the captured value.
    Run on the saved intermediate, rename_input_output is right: the culprit is the first."""
    verdict = _inlined_branch_verdict(sandbox, fixed_point=False)
    assert (verdict.culprit, verdict.exposed_by) == tuple(INLINED)
    assert verdict.staging == "split" and "saved model" in verdict.damage


def test_a_fixed_point_run_is_staged_once_through(sandbox):
    """The same in-memory damage found by a fixed-point campaign: the list run once through
    shows it too, so it is staged and split as a single run, and the first pass is blamed."""
    verdict = _inlined_branch_verdict(sandbox, fixed_point=True)
    assert (verdict.culprit, verdict.exposed_by, verdict.staging) == (*INLINED, "split")
