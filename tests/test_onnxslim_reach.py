"""The onnxslim motifs of ``generators/motifs/onnxslim/symbolic.py``, ``handlers.py`` and
``forms.py`` and the
target's restated options: each motif's draws pass the checker (full check) and run in
onnxruntime, and each reaches what it was written for in onnxslim 0.1.98 (a shape handler
computing with symbols, a rewrite firing on some forms and leaving the others, an option
rebuilding the interface without changing what the model computes)."""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import onnx
import pytest

from fuzzer.targets import get_target
from generators import generate_model
from generators.generate import GeneratedModel
from generators.inputs import synthesize_inputs
from tests.conftest import cpu_session

onnxslim = pytest.importorskip("onnxslim")

NEW_MOTIFS = ("slim-symbolic-window", "slim-symbolic-slice", "slim-symbolic-merge",
              "slim-einsum-forms", "slim-data-dependent-shapes", "slim-dead-node-forms",
              "slim-transpose-view-forms", "slim-reduce-forms", "slim-reshape-as-forms",
              "slim-slice-forms", "slim-unsqueeze-forms", "slim-gemm-forms", "slim-unknown-op",
              "slim-shape-arithmetic", "slim-shape-values", "slim-unknown-extents")
SEEDS = range(10)


@pytest.fixture(scope="module")
def target():
    return get_target("onnxslim")


def _run(gm: GeneratedModel, seed: int) -> list[np.ndarray]:
    onnx.checker.check_model(gm.model, full_check=True)
    return cpu_session(gm.model).run(None, synthesize_inputs(gm.model, seed, gm.input_shapes))


def _alone(name: str, seed: int, opset: int = 13) -> GeneratedModel:
    """Motif ``name`` alone (no random ops, no interface forms) from ``seed``."""
    return generate_model(seed, motifs=[name], opset=opset, nodes=(0, 0), interfaces=[])


def _draws(name: str, opset: int = 13) -> Iterator[GeneratedModel]:
    """:func:`_alone` draws, checked and run, seed by seed."""
    for seed in SEEDS:
        gm = _alone(name, seed, opset)
        _run(gm, seed)
        yield gm


def _slim(target: Any, gm: GeneratedModel, passes: list[str]) -> onnx.ModelProto:
    return target.optimize(gm.model, target.with_passes({}, passes))


def _ops(model: onnx.ModelProto, op: str) -> int:
    return sum(n.op_type == op for n in model.graph.node)


def _symbolic_dims(model: onnx.ModelProto, producers: set[str]) -> list[str]:
    """dim_params of the outputs of nodes of ``producers`` (as slim's inference declared
    them in value_info)."""
    made = {o for n in model.graph.node if n.op_type in producers for o in n.output}
    return [d.dim_param for v in [*model.graph.value_info, *model.graph.output]
            if v.name in made for d in v.type.tensor_type.shape.dim if d.dim_param]


def _recording(monkeypatch: pytest.MonkeyPatch, owner: Any, name: str,
               record: Callable[..., None]) -> None:
    """Wrap ``owner.name`` so that each call is passed to ``record(result, *args)``."""
    original = getattr(owner, name)

    def wrapped(*args: Any, **kwargs: Any) -> Any:
        result = original(*args, **kwargs)
        record(result, *args)
        return result

    monkeypatch.setattr(owner, name, wrapped)


@pytest.mark.parametrize("name", NEW_MOTIFS)
def test_every_new_motif_is_valid_at_its_opsets(name: str) -> None:
    for opset in (7, 9, 10, 11, 12, 13, 17, 18, 21):
        for seed in range(3):
            _run(generate_model(seed, motifs=[name], opset=opset, nodes=(1, 4)), seed)
    for seed in range(12):  # free draws: schema variation rows, mixed opsets
        _run(generate_model(seed, motifs=[name]), seed)


def test_the_new_families_are_drawn_for_slims_hints_only() -> None:
    from generators.motifs import HINTED_ONLY_MOTIFS

    assert set(NEW_MOTIFS) <= HINTED_ONLY_MOTIFS
    for seed in range(60):  # a hint naming shape inference draws them
        if set(generate_model(seed, passes=["shape_infer"]).motifs) & set(NEW_MOTIFS):
            break
    else:
        pytest.fail("no shape_infer-hinted model drew a new motif")


def test_window_shapes_are_computed_from_symbols(target, monkeypatch) -> None:
    from onnxslim.core.shape_inference.context import InferenceContext

    computed: list[Any] = []
    _recording(monkeypatch, InferenceContext, "compute_conv_pool_shape",
               lambda shape, *args: computed.append(shape))
    resized = 0
    for gm in _draws("slim-symbolic-window"):
        slimmed = _slim(target, gm, ["shape_infer"])
        resized += bool(_symbolic_dims(slimmed, {"Resize"}))
    symbolic = [s for s in computed if any(getattr(d, "free_symbols", None) for d in s[2:])]
    assert len(symbolic) >= 4, computed
    assert resized >= 1


def test_slices_of_symbolic_dims_keep_their_symbols(target) -> None:
    sliced, unknown = 0, 0
    for gm in _draws("slim-symbolic-slice"):
        dims = _symbolic_dims(_slim(target, gm, ["shape_infer"]), {"Slice"})
        sliced += any("*" in d or "Max" in d or "Min" in d for d in dims)
        unknown += any(d.startswith("Slice") or d.startswith("unk__") for d in dims)
    assert sliced >= 4
    assert unknown >= 1  # a start only the data knows: a new dim


def test_differently_named_dims_are_merged(target, monkeypatch) -> None:
    from onnxslim.core.shape_inference.context import InferenceContext

    merged: list[set[Any]] = []
    _recording(monkeypatch, InferenceContext, "add_suggested_merge",
               lambda _, ctx, symbols, *rest: merged.append(set(symbols)))
    for gm in _draws("slim-symbolic-merge"):
        _slim(target, gm, ["shape_infer"])
    named = [m for m in merged if sum(isinstance(s, str) for s in m) >= 2]
    assert named, merged


def test_einsum_forms_get_their_output_rank(target, monkeypatch) -> None:
    from onnxslim.core.shape_inference.registry import SHAPE_HANDLERS

    handler = SHAPE_HANDLERS["Einsum"]
    ranks: dict[str, int] = {}
    _recording(monkeypatch, type(handler), "infer_shape", lambda _, self, node, ctx: ranks.update(
        {node.output[0]: len(ctx.known_vi_[node.output[0]].type.tensor_type.shape.dim)}))
    equations, agreed = set(), 0
    for gm in _draws("slim-einsum-forms", opset=13):
        inferred = onnx.shape_inference.infer_shapes(gm.model, strict_mode=True)
        want = {v.name: len(v.type.tensor_type.shape.dim)
                for v in [*inferred.graph.value_info, *inferred.graph.output]}
        _slim(target, gm, ["shape_infer"])
        node = next(n for n in gm.model.graph.node if n.op_type == "Einsum")
        equation = onnx.helper.get_attribute_value(node.attribute[0]).decode()
        if node.output[0] not in ranks:  # the inference stopped before it (and fell back)
            continue
        equations.add(equation)
        # (an ellipsis's dims go first wherever the output has them; the handler gives one
        # implicit "ji" draw rank 1, which the slimmed model does not declare anywhere)
        agreed += "..." not in equation and ranks[node.output[0]] == want[node.output[0]]
    assert len(equations) >= 4 and agreed >= 3, (equations, agreed)
    assert any("..." in e for e in equations) and any("->" not in e for e in equations)


def test_shape_arithmetic_carries_symbols(target, monkeypatch) -> None:
    from onnxslim.core.shape_inference.registry import SHAPE_HANDLERS

    carried: list[Any] = []
    for op in ("Shape", "Gather", "Concat", "ReduceProd"):
        handler = SHAPE_HANDLERS[op]
        _recording(monkeypatch, type(handler), "infer_shape",
                   lambda _, self, node, ctx: carried.append(ctx.sympy_data_.get(node.output[0])))
    for gm in _draws("slim-shape-arithmetic", opset=15):
        _slim(target, gm, ["shape_infer"])

    def symbolic(value: Any) -> bool:
        values = value if isinstance(value, list) else [value]
        return any(getattr(v, "free_symbols", None) for v in values)

    assert sum(symbolic(v) for v in carried) >= 5


def test_shape_values_are_split_and_merged(target, monkeypatch) -> None:
    from onnxslim.core.shape_inference.context import InferenceContext
    from onnxslim.core.shape_inference.registry import SHAPE_HANDLERS

    split: list[Any] = []
    _recording(monkeypatch, type(SHAPE_HANDLERS["Split"]), "infer_shape",
               lambda _, self, node, ctx: split.append(ctx.sympy_data_.get(node.output[0])))
    merged: list[set[Any]] = []
    _recording(monkeypatch, InferenceContext, "add_suggested_merge",
               lambda _, ctx, symbols, *rest: merged.append(set(symbols)))
    for gm in _draws("slim-shape-values", opset=15):
        _slim(target, gm, ["shape_infer"])
    assert any(isinstance(v, list) for v in split)  # a Shape's values, split
    assert any(isinstance(v, np.ndarray) for v in split)  # a Constant's, split
    assert any(any("*" in str(s) for s in m) for m in merged), merged  # 2*p with 2*q


def test_shape_values_reach_the_handlers_other_forms(target, monkeypatch) -> None:
    """The forms the handlers tell apart that no other draw made: a Squeeze without axes, a
    Slice whose bounds are both computed from the data (no ``axes``), one whose end is a
    symbol on a fixed dim, SoftmaxCrossEntropyLoss, a SequenceInsert of another shape and a
    batched MatMul between two differently named batch dims."""
    from onnxslim.core.shape_inference.context import InferenceContext
    from onnxslim.core.shape_inference.registry import SHAPE_HANDLERS

    seen: list[tuple[str, int]] = []
    for cls in {type(SHAPE_HANDLERS[op]) for op in ("Squeeze", "Slice", "SequenceInsert",
                                                    "SoftmaxCrossEntropyLoss")}:
        _recording(monkeypatch, cls, "infer_shape",
                   lambda _, self, node, ctx: seen.append((node.op_type, len(node.input))))
    merged: list[set[Any]] = []
    _recording(monkeypatch, InferenceContext, "add_suggested_merge",
               lambda _, ctx, symbols, *rest: merged.append(set(symbols)))
    for gm in _draws("slim-shape-values", opset=15):
        _slim(target, gm, ["shape_infer"])
    assert ("Squeeze", 1) in seen
    assert ("Slice", 3) in seen
    assert {"SoftmaxCrossEntropyLoss", "SequenceInsert"} <= {op for op, _ in seen}
    assert {"bp", "bq"} in merged, merged


def test_unknown_extents_get_new_dims(target) -> None:
    ops = {"Tile", "Expand", "Pad", "ReduceSum", "ConstantOfShape", "Resize", "Slice",
           "Compress"}
    named: set[str] = set()
    for gm in _draws("slim-unknown-extents", opset=13):
        dims = _symbolic_dims(_slim(target, gm, ["shape_infer"]), ops)
        named |= {d.split("_")[0] for d in dims}
    assert len(named & ops) >= 4, named


def test_an_unknown_op_stops_the_symbolic_inference(target, monkeypatch) -> None:
    from onnxslim.core.shape_inference import ShapeInferencer

    finished: list[bool] = []
    _recording(monkeypatch, ShapeInferencer, "_infer_impl",
               lambda done, *args: finished.append(done))
    stopped = 0
    for gm in _draws("slim-unknown-op"):
        del finished[:]
        slimmed = _slim(target, gm, ["shape_infer"])
        stopped += finished[-1] is False  # incomplete: onnx's inference took over
        assert [n.op_type for n in slimmed.graph.node].count("FusedMatMul") == 1
    assert stopped >= len(SEEDS) // 2  # (not where its output is a typed graph output)


def test_data_dependent_shapes_get_new_dims(target) -> None:
    ops = {"NonZero", "Compress", "Range", "TopK", "ConstantOfShape", "ConcatFromSequence"}
    named: set[str] = set()
    for gm in _draws("slim-data-dependent-shapes"):
        dims = _symbolic_dims(_slim(target, gm, ["shape_infer"]), ops)
        named |= {d.split("_")[0] for d in dims}
    assert len(named & ops) >= 3, named


def test_dead_node_forms_are_removed(target) -> None:
    shrunk = 0
    for gm in _draws("slim-dead-node-forms"):
        slimmed = _slim(target, gm, ["dead_node_elimination", "shape_infer"])
        shrunk += len(slimmed.graph.node) < len(gm.model.graph.node)
    assert shrunk >= len(SEEDS) * 2 // 3


def test_dead_node_forms_slice_empty_tensors(target, monkeypatch) -> None:
    """A Slice of an empty tensor from 1 or to -1 keeps its input's shape, and is turned down
    as a no-op by its bounds."""
    import importlib

    module = importlib.import_module("onnxslim.core.optimization.dead_node_elimination")
    verdicts: list[bool] = []
    _recording(monkeypatch, module, "is_noop_slice",
               lambda result, node: verdicts.append(result)
               if 0 in (node.inputs[0].shape or ()) else None)
    for gm in _draws("slim-dead-node-forms"):
        _slim(target, gm, ["dead_node_elimination", "shape_infer"])
    assert False in verdicts, verdicts


def _views_after_transpose(model: onnx.ModelProto) -> int:
    transposed = {n.output[0] for n in model.graph.node if n.op_type == "Transpose"}
    return sum(n.op_type in ("Reshape", "Squeeze", "Unsqueeze") and n.input[0] in transposed
               for n in model.graph.node)


def test_transpose_view_forms_move_some_views(target) -> None:
    """(The pattern alone: no shape inference, the shapes it reads are the declared ones.) A
    Squeeze of every axis makes onnxslim 0.1.98 give the moved Transpose an empty ``perm``,
    which its exporter refuses (a ValueError): such a draw counts as moved."""
    moved = kept = 0
    for gm in _draws("slim-transpose-view-forms"):
        before = _views_after_transpose(gm.model)
        try:
            slimmed = _slim(target, gm, ["EliminationTransposeViewTranspose"])
        except ValueError as e:
            assert "perm" in str(e)
            moved += 1
            continue
        after = _views_after_transpose(slimmed)
        moved += after < before
        kept += after == before > 0
    assert moved >= 4 and kept >= 1, (moved, kept)


def test_reduce_forms_fuse_some(target) -> None:
    fused = kept = 0
    for gm in _draws("slim-reduce-forms"):
        after = _ops(_slim(target, gm, ["FusionReduce"]), "Unsqueeze")
        fused += after < _ops(gm.model, "Unsqueeze")
        kept += after == _ops(gm.model, "Unsqueeze")
    assert fused >= 1 and kept >= 3, (fused, kept)


def _both_runs(target: Any, gm: GeneratedModel, passes: list[str],
               seed: int) -> tuple[list[np.ndarray], list[np.ndarray] | None]:
    """The outputs of ``gm`` and of its slimmed form (by ``passes``) on the seed's inputs;
    None for the second where onnxruntime refuses the slimmed model."""
    feeds = synthesize_inputs(gm.model, seed, gm.input_shapes)
    want = cpu_session(gm.model).run(None, feeds)
    slim = _slim(target, gm, passes)
    try:
        got = cpu_session(slim).run(None, {i.name: feeds[i.name] for i in slim.graph.input})
    except Exception:  # noqa: BLE001 - onnxruntime refuses the model: the fault's symptom
        return want, None
    return want, got


def _breaks(target: Any, gm: GeneratedModel, passes: list[str], seed: int) -> bool:
    """Whether slimming ``gm`` by ``passes`` gives a model onnxruntime refuses or whose
    outputs take other shapes than the original's."""
    want, got = _both_runs(target, gm, passes, seed)
    return got is None or [w.shape for w in want] != [g.shape for g in got]


def test_reduce_forms_reach_empty_axes_fault(target) -> None:
    """ReduceSum and Unsqueeze both of empty axes (``noop_with_empty_axes`` 0: a sum of every
    axis, put back by none): FusionReduce takes them for equal axes and its ``keepdims`` 1
    keeps every axis, so an output changes shape."""
    assert any(_breaks(target, gm, ["FusionReduce"], seed)
               for seed, gm in zip(range(8), _draws("slim-reduce-forms"), strict=False))


def test_concat_reshape_reaches_allowzero_fault(target) -> None:
    """An empty tensor reshaped with ``allowzero`` 1 by Concat(dynamic dim, [0]):
    FusionConcatReshape writes ``[-1, 0]``, which onnxruntime refuses with ``allowzero``."""
    draws = (_alone("slim-concat-reshape-empty", seed, 17) for seed in range(12))
    assert any(_breaks(target, gm, ["FusionConcatReshape"], seed)
               for seed, gm in enumerate(draws))


def test_reshape_reshape_reaches_the_dynamic_zero_fault(target) -> None:
    """A second Reshape whose shape holds a 0 (copy a dim) computed at run time, its first
    Reshape read by it alone: EliminationReshape checks a shape for zeros only where it is a
    constant, and the merged Reshape copies the input's dim instead."""
    draws = (_alone("slim-reshape-reshape", seed, 13) for seed in range(20))
    assert any(_breaks(target, gm, ["EliminationReshape"], seed)
               for seed, gm in enumerate(draws))


def test_clip_slots_reach_the_empty_input_merge(target) -> None:
    """``Clip(x, c, "")`` beside ``Clip(x, "", c)``: subexpression_elimination buckets both
    by their non-constant input names (the empty one included), then compares them with
    the empty inputs dropped, and merges a lower bound into an upper one."""
    def differs(seed: int, gm: GeneratedModel) -> bool:
        want, got = _both_runs(target, gm, ["subexpression_elimination"], seed)
        return got is not None and any(not np.array_equal(w, g)
                                       for w, g in zip(want, got, strict=True))

    assert any(differs(seed, gm) for seed, gm in zip(SEEDS, _draws("slim-clip-slots"),
                                                     strict=False))


def test_transpose_view_transpose_reaches_the_scalar_fault(target) -> None:
    """A tensor of size 1 transposed, squeezed to a scalar and transposed again:
    EliminationTransposeViewTranspose moves the Squeeze first and writes the rank-0
    Transpose an empty ``perm``, which onnxslim's exporter refuses."""
    def crashes(gm: GeneratedModel) -> bool:
        try:
            _slim(target, gm, ["shape_infer", "EliminationTransposeViewTranspose"])
        except ValueError as exc:
            return "`perm`" in str(exc)
        return False

    draws = (_alone("slim-transpose-view-transpose", seed, 17) for seed in range(40))
    assert any(crashes(gm) for gm in draws)


def test_conv_bn_reaches_mixed_types_fault(target) -> None:
    """BatchNormalization-15 of a float16 input with float statistics (or the reverse), as
    its schema allows: FusionConvBN folds them into a Conv weight of the wider type, beside
    an input of the other (onnxruntime refuses the Conv)."""
    draws = (_alone("slim-conv-bn", seed, 17) for seed in range(12))
    assert any(_breaks(target, gm, ["FusionConvBN", "constant_folding"], seed)
               for seed, gm in enumerate(draws))


def test_signed_zeros_reach_the_value_comparisons(target) -> None:
    """``1 / (x * +0)`` beside ``1 / (x * -0)``: weight_tying ties the two zeros (equal as
    numbers), and subexpression_elimination merges ConstantOfShape nodes of the two values;
    either turns an infinity into its opposite."""
    for passes in (["weight_tying"], ["subexpression_elimination"]):
        flipped = 0
        for seed in range(20):
            gm = _alone("slim-signed-zeros", seed, 13)
            want, got = _both_runs(target, gm, passes, seed)
            flipped += got is not None and any(np.isinf(w).any() and not np.array_equal(w, g)
                                               for w, g in zip(want, got, strict=True))
        assert flipped >= 2, (passes, flipped)


def test_reshape_as_forms_are_replaced_only_untwisted(target) -> None:
    replaced = kept = 0
    for gm in _draws("slim-reshape-as-forms"):
        gathers = _ops(_slim(target, gm, ["EliminationReshapeAs"]), "Gather")
        replaced += gathers < _ops(gm.model, "Gather")  # a chain without twist went
        kept += gathers > 0  # a twisted one stayed
    assert replaced >= 1 and kept >= 3, (replaced, kept)


def test_slice_and_unsqueeze_forms_merge_some_pairs(target) -> None:
    """(Constant folding makes the Constant nodes and computed bounds constants first.) A draw
    chains a few pairs: one that keeps more than half of its ops kept some pair."""
    for name, op, rewrite in (("slim-slice-forms", "Slice", "EliminationSlice"),
                              ("slim-unsqueeze-forms", "Unsqueeze", "EliminationUnsqueeze")):
        merged = kept = 0
        for gm in _draws(name):
            after = _ops(_slim(target, gm, [rewrite, "constant_folding"]), op)
            merged += after < _ops(gm.model, op)
            kept += after > _ops(gm.model, op) // 2
        assert merged >= 1 and kept >= 1, (name, merged, kept)


def test_gemm_forms_fold_some_affines(target) -> None:
    folded = kept = 0
    passes = ["FusionGemm", "FusionGemmMul", "FusionGemmAdd", "constant_folding", "shape_infer"]
    for gm in _draws("slim-gemm-forms"):
        slimmed = _slim(target, gm, passes)
        before = _ops(gm.model, "Mul") + _ops(gm.model, "Add")
        after = _ops(slimmed, "Mul") + _ops(slimmed, "Add")
        folded += after < before
        kept += after > 0  # (a draw chains two or three forms: one of them stayed)
    assert folded >= 1 and kept >= 1, (folded, kept)


def _same_outputs(a: onnx.ModelProto, b: onnx.ModelProto, feeds: dict[str, Any]) -> bool:
    want = cpu_session(a).run(None, feeds)
    names = {i.name for i in b.graph.input}
    got = cpu_session(b).run(None, {k: v for k, v in feeds.items() if k in names})
    return all(np.allclose(w, g, rtol=1e-3, atol=1e-4, equal_nan=True)
               for w, g in zip(want, got, strict=True))


def test_restated_interface_options_keep_what_the_model_computes(target, monkeypatch) -> None:
    from fuzzer.targets.onnxslim import interface

    seen: list[dict[str, Any]] = []
    original = target._mod.slim
    monkeypatch.setattr(target._mod, "slim", lambda m, **kw: seen.append(kw) or original(m, **kw))
    parts = list(interface.OPTIONS)
    for seed in range(8):
        gm = generate_model(seed, passes=["dead_node_elimination"])
        config = {"passes": [], interface.INTERFACE: parts}
        slimmed = target.optimize(gm.model, config)
        feeds = synthesize_inputs(gm.model, seed, gm.input_shapes)
        assert _same_outputs(gm.model, slimmed, feeds)
        assert [(o.name, o.type.tensor_type.elem_type) for o in slimmed.graph.output] == \
            [(o.name, o.type.tensor_type.elem_type) for o in gm.model.graph.output]
        scope = {"onnx": onnx, "model": copy.deepcopy(gm.model)}
        exec(target.repro_snippet(config), scope)  # noqa: S102 - what repro.py runs
        assert scope["optimized"].SerializeToString() == slimmed.SerializeToString()
    assert any({"inputs", "outputs", "input_shapes"} <= set(kw) for kw in seen)
    for kw in seen:  # spelled as slim parses them: name[:type], an input read by a node
        assert all(":" not in s or s.rsplit(":", 1)[1] in interface.SPELLED.values()
                   for s in kw.get("inputs", []) + kw.get("outputs", []))


def test_dtype_is_passed_only_for_models_without_float16(target, monkeypatch) -> None:
    from fuzzer.targets.onnxslim import interface

    passed: list[bool] = []
    original = target._mod.slim
    monkeypatch.setattr(target._mod, "slim",
                        lambda m, **kw: passed.append("dtype" in kw) or original(m, **kw))
    holds = []
    for seed in range(12):
        gm = generate_model(seed, passes=["FusionConvBN"])
        holds.append(interface.holds_float16(gm.model))
        try:
            target.optimize(gm.model, {"passes": [], interface.DTYPE: "fp32"})
        except Exception:  # noqa: BLE001 - slim may fail on the model; the options count
            pass
    assert passed == [not h for h in holds]
    assert any(holds) and not all(holds)


def test_configurations_draw_the_options_sometimes(target) -> None:
    import random

    from fuzzer.targets.onnxslim import interface

    rng = random.Random(1)
    configs = [target.configurations(rng, None) for _ in range(200)]
    restated = [c[interface.INTERFACE] for c in configs if interface.INTERFACE in c]
    assert 30 <= len(restated) <= 90
    assert all(r and set(r) <= set(interface.OPTIONS) for r in restated)
    assert 5 <= sum(interface.DTYPE in c for c in configs) <= 40
    assert "restated" in target.config_phrase({"passes": None, interface.INTERFACE: ["inputs"]})


def test_chained_forms_stay_between_their_bounds() -> None:
    """chain_forms appends ``least`` to ``most`` forms (each one that exists at the opset):
    a model of slim-shape-values no longer holds all of its 23 forms at once."""
    import random

    from generators.builder import GraphBuilder
    from generators.motifs.helpers import Form, chain_forms
    from generators.names import Namer
    from generators.pooled_random import PooledRandom

    drawn: list[int] = []
    for seed in range(40):
        rng = random.Random(seed)
        b = GraphBuilder(rng, PooledRandom(rng), 13, Namer("plain", rng))
        calls: list[str] = []
        forms = {name: Form(0 if name != "late" else 99,  # no opset has the late one
                            lambda b, y, name=name, calls=calls: calls.append(name) or y)
                 for name in [*(f"f{i}" for i in range(23)), "late"]}
        chain_forms(b, None, forms, 2, 6)  # type: ignore[arg-type]
        assert "late" not in calls and len(calls) <= 6 and len(set(calls)) == len(calls)
        drawn.append(len(calls))
    assert min(drawn) <= 2 and max(drawn) >= 5  # the whole range is drawn
