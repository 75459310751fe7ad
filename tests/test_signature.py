"""Message normalization, signature layout, and the WL hash of the change region."""

from __future__ import annotations

import onnx
import pytest
from onnx import helper

from fuzzer.findings.graph_hash import change_hash, change_region
from fuzzer.findings.signature import bundle_id, make_signature, normalize_message, signature_core
from tests.localize_models import chain


@pytest.mark.parametrize(("first", "second"), [
    ("fake pass failed at node 'n0' (index 0x7f12ab)",
     "fake pass failed at node '/layer3/Conv' (index 0x55aa01)"),
    ("output 0 'y': 3 of 12 values differ, max abs error 1.5e-03",
     "output 2 'onnx::Add_12': 7 of 9 values differ, max abs error 4"),
    ("[ONNXRuntimeError] : 1 : FAIL : Load model from /tmp/a/b.onnx failed:Node (n12) Op (Relu)",
     "[ONNXRuntimeError] : 1 : FAIL : Load model from /home/x/y/z.onnx failed:Node (input.1) "
     "Op (Relu)"),
    ("Non-zero status code returned while running Relu node. Name:'n2' Status Message: x",
     "Non-zero status code returned while running Relu node. Name:'/a/b' Status Message: x"),
    ("input 't_3' of node: name: n2 OpType: Relu is not output of any previous nodes.",
     "input '8' of node: name: /Relu_1 OpType: Relu is not output of any previous nodes."),
    ("Unresolved value references: w11,w12,w19,",
     "Unresolved value references: layer16.prelu.bias,model/add_10/kernel:0,onnx::Ran"),
])
def test_same_bug_different_models_normalize_alike(first, second):
    assert normalize_message(first) == normalize_message(second)


def test_optimizer_source_location_is_kept_and_distinguishes_checks():
    a = "RuntimeError: /project/onnxoptimizer/passes/fuse_bn_into_conv.h:87: f: Assertion `x`"
    b = "RuntimeError: /project/onnxoptimizer/passes/fuse_bn_into_conv.h:93: f: Assertion `x`"
    assert "fuse_bn_into_conv.h:87" in normalize_message(a)
    assert "/project" not in normalize_message(a)
    assert normalize_message(a) != normalize_message(b)


def test_signature_layout_and_core():
    sig = make_signature("onnxoptimizer", ["fuse_bn_into_conv"], "output-mismatch",
                         "output 0 'y': differs", "0123abcd")
    assert sig == "onnxoptimizer|fuse_bn_into_conv|output-mismatch|output <n> <name>: differs" \
        "|g:0123abcd"
    assert signature_core(sig) == sig.rsplit("|", 1)[0]
    assert signature_core(signature_core(sig)) == signature_core(sig)
    assert bundle_id("output-mismatch", sig).startswith("output-mismatch-")
    assert make_signature("t", ["a"], "bloat", "m") != make_signature("t", ["b"], "bloat", "m")


def _drop_last_unary(data: bytes) -> bytes:
    """What the fake drop-node pass does to a chain whose last node is not unary."""
    from fuzzer.targets.fake import FakeTarget

    model = onnx.ModelProto()
    model.ParseFromString(data)
    return FakeTarget().optimize(model, {"passes": ["drop-node"]}).SerializeToString()


def test_change_hash_is_the_same_for_the_same_rewrite_in_different_models():
    small = chain(["Exp"], prefix="a", tail="Add")
    large = chain(["Sigmoid", "Neg", "Tanh", "Exp"], prefix="onnx::b_", shape=(1, 8), tail="Add")
    h1 = change_hash(small, _drop_last_unary(small))
    h2 = change_hash(large, _drop_last_unary(large))
    assert h1 is not None and h1 == h2


def test_change_hash_separates_different_rewrites():
    rewire = chain(["Exp"], tail="Add")  # consumer rewired: region {-Exp}
    at_output = chain(["Neg", "Exp"])  # output kept by an Identity: {-Exp, +Identity}
    assert change_hash(rewire, _drop_last_unary(rewire)) != \
        change_hash(at_output, _drop_last_unary(at_output))


def test_change_region_ignores_renamed_inputs_and_nothing_changed_means_no_hash():
    data = chain(["Neg", "Exp"])
    model = onnx.ModelProto()
    model.ParseFromString(data)
    model.graph.node[1].input[0] = "renamed"
    assert change_region(onnx.load_from_string(data), model) == []
    assert change_hash(data, data) is None
    assert change_hash(data, None) is None
    model.graph.node[1].attribute.append(helper.make_attribute("alpha", 1.0))
    assert [label for label, _, _ in change_region(onnx.load_from_string(data), model)] == \
        ["~Exp"]


def test_region_hash_is_memoized_on_the_region_up_to_tensor_names():
    from fuzzer.findings import graph_hash

    def region(a, b, c, d, e, add_reads):
        return [("-Identity", [a, b], [c]), ("+Add", [add_reads, ""], [d]), ("~Relu", [d], [e])]

    first = region("a", "b", "c", "d", "e", add_reads="c")
    renamed = region("x", "y", "z", "w", "v", add_reads="z")
    rewired = region("a", "b", "c", "d", "e", add_reads="a")
    graph_hash._hash_canonical.cache_clear()
    expected = graph_hash._hash_canonical.__wrapped__(graph_hash.canonical_region(first))
    assert graph_hash.region_hash(first) == graph_hash.region_hash(renamed) == expected
    info = graph_hash._hash_canonical.cache_info()
    assert (info.hits, info.misses) == (1, 1)  # the renamed region was not hashed again
    assert graph_hash.region_hash(rewired) != expected  # another graph: Add reads no Identity
    assert graph_hash.region_hash([]) is None


def test_a_siteless_crash_is_matched_by_any_siteless_crash_of_any_crash_symptom():
    """An out-of-bounds read shows as std::bad_alloc in one run and a killed worker in the
    next: localization and reduction keep that finding, not one message of it."""
    from fuzzer.findings.signature import FindingCore
    from oracles.base import Finding

    core = FindingCore.of(Finding("optimizer-error", "optimize", "MemoryError: std::bad_alloc"))
    assert core.matches(Finding("optimizer-abort", "optimize", "worker killed by SIGSEGV"))
    assert core.matches(Finding("optimizer-error", "optimize",
                                "ValueError: basic_string::_M_create"))
    assert not core.matches(Finding("optimizer-error", "optimize",
                                    "RuntimeError: pass.h:250: Assertion failed"))
    assert not core.matches(Finding("invalid-model", "check", "std::bad_alloc"))
    plain = FindingCore.of(Finding("optimizer-error", "optimize", "RuntimeError: pass.h:250"))
    assert not plain.matches(Finding("optimizer-error", "optimize", "std::bad_alloc"))
