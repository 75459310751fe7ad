"""Walking the schema plans: which motif a seed draws first and which plan row that draw
takes (:func:`generators.generate.stratum`, :func:`generators.generate.walk_row`), the seeds
that walk a plan once, the walked share of ``coverage --schema``, and the edits that let a
draw take a level (weights re-cut for a Conv group) or say why it cannot."""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import pytest
from onnx import helper, numpy_helper

from generators.builder import GraphBuilder
from generators.generate import _motif_pool, generate, stratum, walk_row, walk_seeds
from generators.hints import GenerationHints
from generators.inputs import synthesize_inputs
from generators.recipe import RECIPES
from generators.schema.apply import (
    NODE_CANDIDATES,
    PROVIDERS,
    SETTLERS,
    InputContext,
    Refused,
    _converted,
    _group_weight,
    emit_for_row,
    runtime_reason,
)
from generators.schema.levels import HUGE_INT
from generators.schema.plan import always_made, motif_plan
from generators.schema.rules import refusal
from generators.schema.walk import Step, aimed_notes, walk_steps
from tests.conftest import cpu_session, pass_hints, walked_draws

#: a pass hint whose pool holds a few motifs with anchors (conv-bn and its likes).
HINT = GenerationHints.of(["fuse_bn_into_conv"])


def test_consecutive_seeds_rotate_the_pool_in_both_parities() -> None:
    for size in (1, 2, 3, 8, 9):
        for parity in (0, 1):
            drawn = [stratum(seed, size).index for seed in range(parity, 4 * size, 2)]
            assert sorted(set(drawn)) == list(range(size)), (size, parity)
    s = stratum(10**18 + 7, 6)
    assert 0 <= s.index < 6 and s.parity == 1


def test_a_walk_takes_distinct_rows_within_a_lap() -> None:
    length = 7
    rows = [walk_row(1.0, stratum(seed, 1), length) for seed in range(length)]
    assert sorted(rows) == list(range(length))
    halves = [walk_row(0.5, stratum(seed, 1), length) for seed in range(4 * length)]
    taken = [r for r in halves if r is not None]
    assert len(taken) == 2 * length  # half of the draws
    assert sorted(taken[:length]) == list(range(length))  # the first lap: each row once
    assert walk_row(0.0, stratum(5, 1), length) is None


def test_consecutive_varied_draws_of_a_motif_take_distinct_steps() -> None:
    rows: dict[str, list[tuple[int, str | None]]] = defaultdict(list)
    for seed in range(120):
        gm = generate(seed, "v2", HINT)
        for v in gm.varied:
            rows[v["motif"]].append((v["row"], v["aim"]))
    assert rows
    for name, taken in rows.items():
        length = len(walk_steps(name))
        assert len(taken) >= 10, name
        first_lap = taken[:length]
        assert len(set(first_lap)) == len(first_lap), (name, first_lap)


def test_walk_seeds_draw_the_motif_first_at_each_row() -> None:
    name = "conv-bn"
    seeds = walk_seeds(name, "v2", HINT)
    plan = motif_plan(name)
    assert walk_steps(name) == tuple(Step(i) for i in range(len(plan.rows)))  # no variants
    assert sorted(seeds) == list(range(len(plan.rows)))
    pool, _ = _motif_pool(RECIPES["v2"], HINT.passes, HINT.opset)
    for row, seed in list(seeds.items())[:12]:
        assert pool[stratum(seed, len(pool)).index].name == name
        gm = generate(seed, "v2", HINT)
        assert gm.varied and gm.varied[0]["motif"] == name and gm.varied[0]["row"] == row
    assert walk_seeds("no-such-motif-in-this-pool", "v2", HINT) == {}


def test_a_walked_plan_covers_its_motifs_pairs() -> None:
    from fuzzer.commands.coverage_schema import walked

    row = walked("conv-bn", "v2", HINT)
    assert row["rows"] == len(motif_plan("conv-bn").rows)
    assert row["share"] >= 0.9, row["uncovered_reasons"]


def test_a_pair_no_row_can_hold_is_infeasible_with_its_reason() -> None:
    # BatchNormalization's scale in double needs its input in double; conv-bn ties that
    # input to the Conv, which onnxruntime does not run in double
    plan = motif_plan("conv-bn")
    bad = plan.infeasible["BatchNormalization"]
    pair = (("attr:epsilon", "absent"), ("dtype:T1", "double"))
    assert pair in bad and pair not in plan.pairs["BatchNormalization"]
    assert "ties BatchNormalization.T to Conv.T" in bad[pair]


def _context(op: str, x: tuple[int, ...], w: np.ndarray, group: int | None) -> InputContext:
    node = helper.make_node(op, ["x", "w"], ["y"], **({"group": group} if group else {}))
    types = {"x": helper.make_tensor_type_proto(1, list(x)),
             "w": helper.make_tensor_type_proto(1, list(w.shape))}
    return InputContext(node, None, types, {"w": numpy_helper.from_array(w, "w")}, None)


@pytest.mark.parametrize(("op", "x", "w", "group", "want"), [
    ("Conv", (1, 4, 5, 5), (6, 4, 3, 3), 2, (6, 2, 3, 3)),
    ("Conv", (1, 4, 5, 5), (6, 2, 3, 3), 1, (6, 4, 3, 3)),  # group 2 -> 1: tiled
    ("ConvTranspose", (1, 4, 5, 5), (4, 6, 3, 3), 2, (4, 3, 3, 3)),
])
def test_a_group_edit_recuts_the_weight(op: str, x: tuple[int, ...], w: tuple[int, ...],
                                        group: int, want: tuple[int, ...]) -> None:
    weight = np.arange(np.prod(w), dtype=np.float32).reshape(w)
    old = 2 if w[1] * 2 == x[1] and op == "Conv" else None
    c = _context(op, x, weight, old)
    new = helper.make_node(op, ["x", "w"], ["y"], group=group)
    assert _group_weight(c, new)[1].shape == want


def test_a_qlinear_conv_group_edit_recuts_its_weight_at_input_3() -> None:
    # QLinearConv reads its weight after x, x_scale and x_zero_point
    names = ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz"]
    w = np.arange(4 * 4 * 9, dtype=np.uint8).reshape(4, 4, 3, 3)
    types = {"x": helper.make_tensor_type_proto(2, [1, 4, 5, 5]),
             "w": helper.make_tensor_type_proto(2, list(w.shape))}
    node = helper.make_node("QLinearConv", names, ["y"])
    c = InputContext(node, None, types, {"w": numpy_helper.from_array(w, "w")}, None)
    got = _group_weight(c, helper.make_node("QLinearConv", names, ["y"], group=2))
    assert list(got) == [3] and got[3].shape == (4, 2, 3, 3)
    assert NODE_CANDIDATES[("QLinearConv", "group")](c, "nondefault") == [2, 4]
    assert "weight channels x group" in runtime_reason(
        helper.make_node("QLinearConv", names, ["y"], group=2), types)


def test_a_group_that_divides_no_channel_count_is_refused_with_the_reason() -> None:
    c = _context("Conv", (1, 3, 5, 5), np.ones((4, 3, 3, 3), np.float32), None)
    with pytest.raises(Refused, match="does not divide the input channels"):
        _group_weight(c, helper.make_node("Conv", ["x", "w"], ["y"], group=2))


@pytest.mark.parametrize(("op", "w", "group", "channels"), [
    ("Conv", (6, 2, 3, 3), 2, 6),
    ("ConvTranspose", (4, 3, 3, 3), None, 3),
    ("ConvTranspose", (4, 3, 3, 3), 2, 6),
])
def test_an_added_conv_bias_has_one_value_per_output_channel(op: str, w: tuple[int, ...],
                                                            group: int | None,
                                                            channels: int) -> None:
    """Conv's weight is (M, C / group, k...), ConvTranspose's (C, M / group, k...)."""
    import random

    c = _context(op, (1, 4, 5, 5), np.ones(w, np.float32), group)
    c.rng = random.Random(0)
    assert PROVIDERS[(op, "B")](c).shape == (channels,)


def test_a_convtranspose_output_padding_onnxruntime_refuses_is_told_before_the_run() -> None:
    """output_padding 1 at stride 1 (the spec allows it below the dilation, 2): onnxruntime
    refuses it, and the draw says so before running it; at stride 2 both take it."""
    x = np.ones((1, 2, 5, 5), np.float32)
    for strides, refused in (([1, 1], True), ([2, 2], False)):
        node = helper.make_node("ConvTranspose", ["x", "w"], ["y"], strides=strides,
                                dilations=[2, 2], output_padding=[1, 1])
        assert (runtime_reason(node, {}) is not None) is refused
        graph = helper.make_graph(
            [node], "g", [helper.make_tensor_value_info("x", 1, list(x.shape))],
            [helper.make_tensor_value_info("y", 1, None)],
            [numpy_helper.from_array(np.ones((2, 3, 3, 3), np.float32), "w")])
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
        try:
            cpu_session(model).run(None, {"x": x})
            ran = True
        except Exception:  # onnxruntime's Fail or InvalidArgument
            ran = False
        assert ran is not refused


def test_a_retype_to_a_narrower_integer_type_clips_and_never_wraps() -> None:
    """A Slice end of INT64_MAX ("to the end") stays the largest int32, not -1, and a float
    past the range its largest value (a Slice with int32 bounds then slices as before)."""
    ends = numpy_helper.from_array(np.array([2**63 - 1, -2**63, 5], np.int64), "e")
    assert numpy_helper.to_array(_converted(ends, 6)).tolist() == [2**31 - 1, -2**31, 5]
    edges = numpy_helper.from_array(np.array([1e20, -np.inf, -2.7], np.float32), "f")
    assert numpy_helper.to_array(_converted(edges, 6)).tolist() == [2**31 - 1, -2**31, -2]


def test_a_divisor_retyped_to_an_integer_type_never_rounds_to_zero() -> None:
    """A float scale of 0.5 that a Div reads becomes 1 in int32, not 0 (onnxruntime refuses
    an integer division by zero); another constant keeps its rounded value."""
    t = numpy_helper.from_array(np.array([0.5, 2.0, -0.25], np.float32), "s")
    assert numpy_helper.to_array(_converted(t, 6, divisor=True)).tolist() == [1, 2, 1]
    assert numpy_helper.to_array(_converted(t, 6)).tolist() == [0, 2, 0]
    assert numpy_helper.to_array(_converted(t, 10, divisor=True)).tolist() == [0.5, 2.0, -0.25]


def test_a_convtranspose_output_shape_is_held_within_what_its_strides_reach() -> None:
    """An output_shape written as the node's own output (stride 2: 11) and a stride edited
    to 1 in the same draw: lowered to 7, which onnxruntime runs; one within reach stays."""
    x = np.ones((1, 2, 5, 5), np.float32)
    types = {"x": helper.make_tensor_type_proto(1, list(x.shape)),
             "w": helper.make_tensor_type_proto(1, [2, 3, 3, 3])}
    for strides, written, held in (([1, 1], [11, 11], [7, 7]), ([2, 2], [11, 11], [11, 11]),
                                   ([2, 2], [9, 10], [9, 10])):
        node = helper.make_node("ConvTranspose", ["x", "w"], ["y"], strides=strides,
                                output_shape=written)
        SETTLERS["ConvTranspose"](node, types)
        (shape,) = (a for a in node.attribute if a.name == "output_shape")
        assert list(shape.ints) == held
        graph = helper.make_graph(
            [node], "g", [helper.make_tensor_value_info("x", 1, list(x.shape))],
            [helper.make_tensor_value_info("y", 1, None)],
            [numpy_helper.from_array(np.ones((2, 3, 3, 3), np.float32), "w")])
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
        assert cpu_session(model).run(None, {"x": x})[0].shape[2:] == tuple(held)


@pytest.mark.parametrize(("name", "passes"), [
    ("common-subexpression", ["eliminate_common_subexpression"]),
    ("idempotent-pair", ["eliminate_consecutive_idempotent_ops"]),
    ("slim-neutral-broadcast", ["dead_node_elimination"]),
])
def test_the_walk_of_a_motif_of_variants_covers_each_anchors_pairs(name: str,
                                                                   passes: list[str]) -> None:
    # a draw makes one of the anchor ops (an Add, a Mul, a Sub or a Div): walking the plan's
    # rows alone covered a variant's share of each op's pairs (idempotent-pair: 33 of
    # Reshape's 136), each step aimed at one op covers them
    from fuzzer.commands.coverage_schema import walked

    steps = walk_steps(name)
    plan = motif_plan(name)
    assert {s.aim for s in steps} >= set(plan.spaces) - {None}
    assert {s.row for s in steps} == set(range(len(plan.rows)))  # every row still visited
    row = walked(name, "v2", GenerationHints.of(passes))
    assert row["rows"] == len(steps)
    for op, n in row["per_op"].items():
        assert n["covered"] >= 0.9 * n["pairs"], (op, n, row["uncovered_reasons"])


def test_a_draw_aimed_at_a_variant_makes_it_and_a_plain_draw_is_unchanged() -> None:
    # the aim only overrides a choice among the variants it names: aimed at no variant of
    # the motif, a draw is byte for byte the plain draw (it draws nothing more); aimed
    # through emit_for_row at any variant a float input can make, the draw makes it
    bool_only = {"And", "Or"}
    for name in ("slim-symbolic-broadcast", "sim-reduce-reduce", "op-with-unit", "ort-cse",
                 "reduce-unsqueeze", "ort-pad-into", "slim-transpose-view-transpose",
                 "idempotent-pair", "common-subexpression", "slim-neutral-broadcast",
                 "ort-folded", "sim-nop-reduce", "os-symbolic-shapes", "os-hard-swish",
                 "os-unused-outputs"):
        plan = motif_plan(name)
        for seed in range(6):
            _, made = _draw(name, seed, None, None)
            _, aimed = _draw(name, seed, "NoSuchOp", None)
            assert made is not None and aimed is not None
            assert [n.SerializeToString() for n in aimed.nodes] == \
                [n.SerializeToString() for n in made.nodes], (name, seed)
            for op in set(plan.spaces) - bool_only:
                _, b = _draw(name, seed, op, plan)
                if b is not None and op in always_made(name, *plan.opsets):
                    continue
                assert b is None or op in {n.op_type for n in b.nodes}, (name, seed, op)


def _draw(name: str, seed: int, aim: str | None,
          plan: object) -> tuple[object, GraphBuilder | None]:
    """One draw of motif ``name`` into a builder with a unit-first-dim float input: plain
    (``aim`` None), or aimed, by the builder's aim alone (``plan`` None) or through
    :func:`emit_for_row` (``plan``). Returns the result and the builder (None where the
    motif cannot take the input)."""
    import random

    from generators.motifs import MOTIFS
    from generators.names import Namer
    from generators.pooled_random import PooledRandom
    from generators.values import FLOAT

    m = MOTIFS[name]
    rng = random.Random(seed)
    b = GraphBuilder(rng, PooledRandom(rng), 18, Namer("plain", rng))
    x = b.graph_input(FLOAT, (1, 4, 6, 6)[:max(m.ranks[0], min(m.ranks[1], 4))])
    if plan is not None:
        result = emit_for_row(b, m.emit, x, set(), aim)
    else:
        b.aim = aim
        result = m.emit(b, x)
    return result, b if result is not None else None


def test_the_builders_variant_draws_nothing_and_keeps_a_draw_without_aim() -> None:
    import random

    from generators.names import Namer
    from generators.pooled_random import PooledRandom

    rng = random.Random(3)
    b = GraphBuilder(rng, PooledRandom(rng), 18, Namer("plain", rng))
    state = rng.getstate()
    assert b.variant("Add", ["Add", "Mul"]) == "Add"
    b.aim = "Mul"
    assert b.variant("Add", ["Add", "Mul"]) == "Mul"
    assert b.variant("Add", ["Add", "Sub"]) == "Add"  # not one of these options
    assert rng.getstate() == state


def test_a_draw_aimed_at_one_variant_is_not_noted_for_the_others() -> None:
    notes = ["Add|*: the draw made no Add node", "Mul|*: the draw made no Mul node",
             "Mul|attr:x=edge: no candidate"]
    assert aimed_notes(notes, "Mul") == notes[1:]
    assert aimed_notes(notes, None) == notes


def test_a_pinned_opset_counts_only_the_pairs_a_model_of_it_can_hold() -> None:
    from generators.schema.measure import at_opset

    plan = motif_plan("conv-bn")
    kept, left = at_opset(plan, 9)
    assert sum(len(p) for p in kept.values()) + sum(left.values()) == \
        sum(len(p) for p in plan.pairs.values())
    # BatchNormalization-9 is in force at opset 9: no pair of version 15, none of training
    assert all(("opset", "15") not in p for p in kept["BatchNormalization"])
    assert not any(f == "attr:training_mode" for p in kept["BatchNormalization"] for f, _ in p)
    assert left and all(why.startswith("the pass's hint pins opset 9") for why in left)


def test_a_pair_the_ties_of_all_variants_refuse_gets_a_row_under_its_own_variants_ties() -> None:
    # ort-quant-after-act ties its anchors' types one way in one variant and another way in
    # another: under the union of the variants' ties no row holds some of its pairs; rows
    # checked under the ties of the draws that make the pair's op hold them (a walk aimed at
    # the op takes them), or those ties give the pair its reason (Clip in float16, which
    # onnxruntime runs, tied to a QuantizeLinear-10 input, which the schema keeps float)
    from generators.motifs import MOTIFS
    from generators.schema.plan import build_plan, op_pairs_with_opset, probe

    name = "ort-quant-after-act"
    plan = motif_plan(name)
    ties, joint = probe(name, *plan.opsets)
    assert not joint
    union = build_plan(name, MOTIFS[name].anchors, *plan.opsets, ties, joint)
    left = {(op, p) for op, ps in union.unplanned.items() for p in ps}
    assert len(left) >= 10 and not plan.unplanned
    held = set().union(*(op_pairs_with_opset(r, plan.spaces) for r in plan.rows))
    reasoned = {(op, p) for op, ps in plan.infeasible.items() for p in ps}
    assert len(left & held) >= 5 and left <= held | reasoned


def test_a_draw_aimed_at_a_variant_holds_its_type_or_notes_why() -> None:
    # reduce-unsqueeze makes a ReduceSum, ReduceMean or ReduceMax before its Unsqueeze;
    # every aimed draw holds the types its row gives the aim and the Unsqueeze, or notes
    # why; the rows hold each variant's tie with the Unsqueeze (the plan's ties read the
    # probes aimed at each variant too), so no row gives the two different types
    import onnx

    name, hint = "reduce-unsqueeze", GenerationHints.of(["fuse_consecutive_reduce_unsqueeze"])
    plan, steps = motif_plan(name), walk_steps(name)
    apart, aims = 0, set()
    for step, seed in list(walk_seeds(name, "v2", hint).items())[:60]:
        aim = steps[step].aim
        aims.add(aim)
        gm = generate(seed, "v2", hint)
        notes = " ".join(n for v in gm.varied for n in v["notes"])
        levels = [n.split(": ", 1)[0] for v in gm.varied for n in v["notes"]]
        assert len(levels) == len(set(levels)), levels  # each lost level noted once
        if aim is None or "draw undone" in notes:
            continue
        inferred = onnx.shape_inference.infer_shapes(gm.model)
        g = inferred.graph
        elem = {v.name: v.type.tensor_type.elem_type for v in [*g.value_info, *g.output]}
        row = plan.rows[steps[step].row]
        start, end = next((a, b) for m, a, b in gm.spans if m == name)
        for op in (aim, "Unsqueeze"):
            level = row.get(f"{op}|dtype:T")
            node = next(n for n in gm.model.graph.node[start:end] if n.op_type == op)
            held = onnx.helper.tensor_dtype_to_np_dtype(elem[node.output[0]]).name \
                if elem.get(node.output[0]) else None
            assert held in (level, {"float": "float32", "double": "float64"}.get(level)) \
                or f"{op}|dtype:T={level}" in notes, (seed, op, level, held, notes)
        apart += row.get(f"{aim}|dtype:T") != row.get("Unsqueeze|dtype:T")
    assert apart == 0 and {"ReduceSum", "ReduceMean", "ReduceMax"} <= aims


def test_a_row_with_a_conv_group_keeps_an_emission_whose_channels_take_it() -> None:
    # a non-default group needs input and output channels with a common divisor above 1;
    # the draw emits again until the Conv's channels have one (generators.schema.apply.PREVIEWS)
    # where its input has more than one channel (or another edit of the row undid the draw,
    # or the weight is computed, which its notes say)
    grouped = 0
    for _, gm, _ in walked_draws("pad-conv", GenerationHints.of(["fuse_pad_into_conv"]),
                                 "Conv|attr:group", ("nondefault",)):
        conv = next(n for n in gm.model.graph.node if n.op_type == "Conv")
        if any(a.name == "group" and a.i > 1 for a in conv.attribute):
            grouped += 1
        else:
            assert any("the input channels (1)" in n or "draw undone" in n or
                       "no constant of known shape" in n for v in gm.varied for n in v["notes"])
    assert grouped >= 2


def test_a_walk_aims_a_row_only_at_a_variant_whose_ties_it_keeps() -> None:
    # pad-pool's rows are built under the ties of all its variants; some give a pool op a
    # type its own variant's ties refuse, and no step aims such a row at it
    from generators.schema.plan import variant_conflict
    from generators.schema.walk import _aims

    plan, steps = motif_plan("pad-pool"), walk_steps("pad-pool")
    apart = [op for op in plan.spaces if op not in always_made("pad-pool", *plan.opsets)]
    refused = {(i, op) for i, row in enumerate(plan.rows) for op in apart
               if plan.op_row(row, op) and variant_conflict(plan, row, op) is not None}
    assert refused
    assert all(op not in _aims(plan, i, apart) for i, op in refused)
    assert all((s.row, s.aim) not in refused for s in steps)


def test_a_pair_no_row_holds_under_its_own_variants_ties_either_is_infeasible() -> None:
    # sim-optional's OptionalGetElement reads an Optional that onnxruntime has no kernel
    # for with a bool element: no row holds V=bool under the ties of the draws that make it
    plan = motif_plan("sim-optional")
    bad = plan.infeasible["OptionalGetElement"]
    pair = (("dtype:V", "bool"), ("opset", "18"))
    assert bad[pair].startswith("with the ties of the draws that make OptionalGetElement")
    assert pair not in plan.pairs["OptionalGetElement"]
    assert not any(pair in d for d in plan.unplanned.values())


def test_ort_folded_aimed_at_its_cast_makes_one_on_an_integer_input() -> None:
    import random

    from generators.motifs import MOTIFS
    from generators.names import Namer
    from generators.pooled_random import PooledRandom
    from generators.values import INT64

    for seed in range(4):
        rng = random.Random(seed)
        b = GraphBuilder(rng, PooledRandom(rng), 18, Namer("plain", rng))
        b.aim = "Cast"
        assert MOTIFS["ort-folded"].emit(b, b.graph_input(INT64, (2, 3))) is not None
        assert "Cast" in {n.op_type for n in b.nodes}


def test_a_type_the_kernel_registry_lists_but_the_kernel_refuses_is_refused() -> None:
    from generators.schema.kernels import kernel_reason

    assert "refuses T2=float8e4m3fn when the session initializes" in kernel_reason(
        "ConstantOfShape", "", 20, {"T2": "float8e4m3fn"})
    assert kernel_reason("ConstantOfShape", "", 20, {"T2": "bfloat16"}) is None


@pytest.mark.parametrize(("op", "opset", "binds"), [
    ("CastLike", 21, {"T1": "float", "T2": "double"}),
    ("CastLike", 15, {"T1": "int64", "T2": "float16"}),
    ("Constant", 21, {"T": "float16"}),
    ("Constant", 13, {"T": "bool"}),
])
def test_ops_without_a_kernel_of_their_own_run(op, opset, binds) -> None:
    """The kernel registry lists neither CastLike (expanded by its function) nor Constant
    (made an initializer): both are feasible, and onnxruntime runs them indeed."""
    from onnx import TensorProto

    from generators.schema.kernels import kernel_reason

    assert kernel_reason(op, "", opset, binds) is None
    elem = {n: getattr(TensorProto, n.upper()) for n in ("float", "double", "float16",
                                                         "int64", "bool")}
    if op == "CastLike":
        node = helper.make_node("CastLike", ["x", "like"], ["y"])
        inputs = [helper.make_tensor_value_info("x", elem[binds["T1"]], [2]),
                  helper.make_tensor_value_info("like", elem[binds["T2"]], [1])]
        feeds = {"x": np.ones(2, helper.tensor_dtype_to_np_dtype(elem[binds["T1"]])),
                 "like": np.ones(1, helper.tensor_dtype_to_np_dtype(elem[binds["T2"]]))}
        out = elem[binds["T2"]]
    else:
        out = elem[binds["T"]]
        value = numpy_helper.from_array(np.ones(2, helper.tensor_dtype_to_np_dtype(out)), "v")
        node, inputs, feeds = helper.make_node("Constant", [], ["y"], value=value), [], {}
    model = helper.make_model(helper.make_graph(
        [node], "g", inputs, [helper.make_tensor_value_info("y", out, [2])]),
        opset_imports=[helper.make_opsetid("", opset)])
    (y,) = cpu_session(model).run(None, feeds)
    assert y.dtype == helper.tensor_dtype_to_np_dtype(out) and y.tolist() == [1, 1]


@pytest.mark.parametrize(("x", "params"), [("float16", "float"), ("float", "float16"),
                                           ("float16", "float16")])
def test_float16_without_a_kernel_runs_as_float(x, params) -> None:
    """BatchNormalization-15's CPU kernels are float and double only; onnxruntime runs
    float16 inputs through float (its InsertCastTransformer), in any mix of its three type
    constraints: feasible, and run indeed. bfloat16, and float16 on an output alone, stay
    refused."""
    from onnx import TensorProto

    from generators.schema.kernels import kernel_reason

    binds = {"T": x, "T1": params, "T2": params}
    assert kernel_reason("BatchNormalization", "", 15, binds) is None
    assert kernel_reason("BatchNormalization", "", 15, {**binds, "T": "bfloat16"})
    assert kernel_reason("RandomNormalLike", "", 1, {"T1": "float", "T2": "float16"})
    elem = {"float": TensorProto.FLOAT, "float16": TensorProto.FLOAT16}
    weights = [numpy_helper.from_array(np.full(3, 0.5, helper.tensor_dtype_to_np_dtype(
        elem[params])), name) for name in ("scale", "bias", "mean", "var")]
    model = helper.make_model(helper.make_graph(
        [helper.make_node("BatchNormalization", ["x", "scale", "bias", "mean", "var"], ["y"])],
        "g", [helper.make_tensor_value_info("x", elem[x], [1, 3, 2])],
        [helper.make_tensor_value_info("y", elem[x], [1, 3, 2])], weights),
        opset_imports=[helper.make_opsetid("", 15)])
    (y,) = cpu_session(model).run(None, {"x": np.ones((1, 3, 2), helper.tensor_dtype_to_np_dtype(
        elem[x]))})
    assert y.dtype == helper.tensor_dtype_to_np_dtype(elem[x]) and y.shape == (1, 3, 2)


def test_a_clip_whose_bounds_onnxruntime_refuses_is_told_before_the_run() -> None:
    from generators.schema.apply import runtime_reason

    def clip(**bounds: float) -> object:
        return helper.make_node("Clip", ["x"], ["y"], **bounds)

    assert "min attribute at most its max" in runtime_reason(clip(min=2.0, max=1.0), {})
    assert runtime_reason(clip(min=float("nan")), {}) is not None
    assert runtime_reason(clip(min=float("inf")), {}) is not None
    assert runtime_reason(clip(min=-1.0, max=1.0), {}) is None


def test_a_type_level_the_draw_refused_is_noted_once() -> None:
    # ort-qlinear-conv's rows give QLinearConv's bias type T4, which no tensor of a node
    # without its bias is bound to: the level is noted where the retype meets it, and the
    # check for lost types does not note it a second time
    hints = pass_hints("onnxruntime", "NhwcTransformer")
    refused = 0
    for _, gm, _ in walked_draws("ort-qlinear-conv", hints, "QLinearConv|dtype:T4",
                                 ("int32",)):
        levels = [n.split(": ", 1)[0] for v in gm.varied for n in v["notes"]]
        assert len(levels) == len(set(levels)), levels
        refused += "QLinearConv|dtype:T4=int32" in levels
    assert refused


def test_a_kernel_check_of_one_retype_reads_the_types_the_row_is_still_to_give() -> None:
    # ort-matmul-bn ties BatchNormalization's input type to MatMul's: onnxruntime runs a
    # double BatchNormalization only with double statistics (T1, T2), which the row gives
    # it after MatMul's retype; the check of that retype reads them, so the row is taken
    hints = pass_hints("onnxruntime", "MatMul_BatchNormalization_Fusion")
    draws = walked_draws("ort-matmul-bn", hints, "BatchNormalization|dtype:T1", ("double",))
    assert draws
    for seed, gm, row in draws:
        if row.get("MatMul|dtype:T") == "double":
            assert not [n for v in gm.varied for n in v["notes"]], seed
            types = {vi.name: vi.type.tensor_type.elem_type for vi in gm.model.graph.value_info}
            bn = next(n for n in gm.model.graph.node if n.op_type == "BatchNormalization")
            assert types.get(bn.output[0], 11) == 11  # double


def test_shape_bounds_are_drawn_to_keep_what_a_reshape_to_the_shape_needs() -> None:
    # Shape-15's start and end: edge values that clamp to the whole shape, and bounds that
    # drop unit dims only, so Reshape(x, Shape(y)) keeps its element count
    import onnx

    from generators.inputs import synthesize_inputs
    from generators.schema.apply import NODE_CANDIDATES
    from generators.schema.levels import EDGE, NONDEFAULT, edge_int
    from tests.conftest import cpu_session

    ctx = _context("Shape", (1, 1, 3, 1), np.zeros(1, np.float32), None)
    starts, ends = NODE_CANDIDATES[("Shape", "start")], NODE_CANDIDATES[("Shape", "end")]
    assert starts(ctx, NONDEFAULT) == [1, 2]
    assert ends(ctx, NONDEFAULT) == [4, 3]
    assert all(edge_int(v) for v in starts(ctx, EDGE) + ends(ctx, EDGE))
    hint = GenerationHints.of(["eliminate_shape_op"])
    for seed, gm, _ in walked_draws("shape-fold", hint, "Shape|attr:end", (EDGE,)):
        shape = next(n for n in gm.model.graph.node if n.op_type == "Shape")
        if any(a.name == "end" for a in shape.attribute):
            onnx.checker.check_model(gm.model, full_check=True)
            cpu_session(gm.model).run(None, synthesize_inputs(gm.model, seed,
                                                              gm.input_shapes))
            return
    raise AssertionError("no walked draw of shape-fold took Shape's end at its edge level")


def test_flipping_a_gemm_transpose_flag_transposes_its_constant_operand() -> None:
    from generators.schema.apply import ATTR_ADAPTERS

    w = np.arange(6, dtype=np.float32).reshape(2, 3)
    node = helper.make_node("Gemm", ["a", "w"], ["y"])
    ctx = InputContext(node, None, {"a": helper.make_tensor_type_proto(1, [4, 2]),
                                    "w": helper.make_tensor_type_proto(1, [2, 3])},
                       {"w": numpy_helper.from_array(w, "w")}, None)
    flipped = helper.make_node("Gemm", ["a", "w"], ["y"], transB=1)
    got = ATTR_ADAPTERS[("Gemm", "transB")](ctx, flipped)
    assert list(got) == [1] and np.array_equal(got[1], w.T)  # A @ w == A @ (w.T).T
    same = ATTR_ADAPTERS[("Gemm", "transA")](ctx, flipped)  # one adapter for both flags
    assert list(same) == [1] and np.array_equal(same[1], w.T)
    assert ATTR_ADAPTERS[("Gemm", "transB")](ctx, node) == {}  # no flag flipped


def test_a_block_size_cuts_the_scale_and_zero_point_in_blocks() -> None:
    from generators.schema.apply import ATTR_ADAPTERS

    node = helper.make_node("DequantizeLinear", ["x", "s", "z"], ["y"], axis=1)
    ctx = InputContext(node, None, {"x": helper.make_tensor_type_proto(3, [2, 5, 4])},
                       {"s": numpy_helper.from_array(np.array(0.5, np.float32), "s"),
                        "z": numpy_helper.from_array(np.array(3, np.int8), "z")}, None)
    blocked = helper.make_node("DequantizeLinear", ["x", "s", "z"], ["y"], axis=1,
                               block_size=2)
    got = ATTR_ADAPTERS[("DequantizeLinear", "block_size")](ctx, blocked)
    assert got[1].shape == got[2].shape == (2, 3, 4)  # ceil(5 / 2) blocks on axis 1
    assert (got[1] == 0.5).all() and got[2].dtype == np.int8 and (got[2] == 3).all()
    assert ATTR_ADAPTERS[("DequantizeLinear", "block_size")](ctx, node) == {}


@pytest.mark.parametrize("steps", [None, [2, 1]])
def test_leaving_slice_axes_out_lays_the_bounds_out_over_the_leading_axes(steps) -> None:
    # Slice(x, starts, ends, axes=[-1, 1], steps) and the adapted Slice without axes give
    # the same values (onnx's reference evaluator)
    from generators.schema.apply import DROP_ADAPTERS

    x = np.arange(2 * 5 * 6, dtype=np.float32).reshape(2, 5, 6)
    bounds = {"s": np.array([1, 0], np.int64), "e": np.array([5, 4], np.int64),
              "a": np.array([-1, 1], np.int64)}
    if steps is not None:
        bounds["st"] = np.array(steps, np.int64)
    names = ["x", "s", "e", "a", *(["st"] if steps is not None else [])]
    node = helper.make_node("Slice", names, ["y"])
    ctx = InputContext(node, None, {"x": helper.make_tensor_type_proto(1, [2, 5, 6])},
                       {k: numpy_helper.from_array(v, k) for k, v in bounds.items()}, None)
    dropped = helper.make_node("Slice", ["x", "s", "e", "", *names[4:]], ["y"])
    got = DROP_ADAPTERS[("Slice", "axes")](ctx, dropped)
    assert sorted(got) == ([1, 2, 4] if steps is not None else [1, 2])
    assert got[1].tolist() == [0, 0, 1] and got[2][2] == 5  # axis 0 whole, 1 and 2 kept
    expected = _sliced(x, node, bounds)
    adapted = dict(bounds, s=got[1], e=got[2], **({"st": got[4]} if 4 in got else {}))
    assert np.array_equal(_sliced(x, dropped, adapted), expected)
    assert _sliced(x, dropped, bounds).shape != expected.shape  # without the adapter


def _sliced(x: np.ndarray, node, consts: dict[str, np.ndarray]) -> np.ndarray:
    """``node`` (a Slice) on ``x`` and the constant inputs ``consts``, by onnx's reference
    evaluator."""
    from onnx.reference import ReferenceEvaluator

    graph = helper.make_graph(
        [node], "slice", [helper.make_tensor_value_info("x", 1, list(x.shape))],
        [helper.make_tensor_value_info("y", 1, None)],
        [numpy_helper.from_array(v, k) for k, v in consts.items() if k in node.input])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    return ReferenceEvaluator(model).run(None, {"x": x})[0]


def test_leaving_pad_axes_out_pads_every_axis() -> None:
    from generators.schema.apply import DROP_ADAPTERS

    node = helper.make_node("Pad", ["x", "p", "", "a"], ["y"])
    ctx = InputContext(node, None, {"x": helper.make_tensor_type_proto(1, [2, 3, 4])},
                       {"p": numpy_helper.from_array(np.array([1, 0, 2, 3], np.int64), "p"),
                        "a": numpy_helper.from_array(np.array([2, -2], np.int64), "a")},
                       None)
    drop = DROP_ADAPTERS[("Pad", "axes")]
    got = drop(ctx, helper.make_node("Pad", ["x", "p"], ["y"]))
    assert got[1].tolist() == [0, 0, 1, 0, 3, 2]  # begins of axes 0..2, then their ends
    ctx.consts["a"] = numpy_helper.from_array(np.array([0, 1], np.int64), "a")
    got = drop(ctx, helper.make_node("Pad", ["x", "p"], ["y"]))
    assert got[1].tolist() == [1, 0, 0, 2, 3, 0]  # leading axes, but not all of them
    ctx.consts["a"] = numpy_helper.from_array(np.array([0, 1, 2], np.int64), "a")
    assert drop(ctx, helper.make_node("Pad", ["x", "p"], ["y"])) == {}  # all, in order


def test_a_written_kernel_shape_is_the_weights_spatial_dims() -> None:
    # the one value onnxruntime takes ("kernel_shape is not compatible with W shape")
    from generators.schema.apply import NODE_CANDIDATES
    from generators.schema.levels import EDGE, NONDEFAULT

    node = helper.make_node("Conv", ["x", "w"], ["y"])
    ctx = InputContext(node, None, {"x": helper.make_tensor_type_proto(1, [1, 2, 6, 5]),
                                    "w": helper.make_tensor_type_proto(1, [4, 2, 3, 2])},
                       {}, None)
    for op in ("Conv", "ConvTranspose"):
        assert NODE_CANDIDATES[(op, "kernel_shape")](ctx, NONDEFAULT) == [[3, 2]]
        assert NODE_CANDIDATES[(op, "kernel_shape")](ctx, EDGE) == []


def test_resize_window_options_onnxruntime_refuses_are_told_before_the_run() -> None:
    from generators.schema.apply import runtime_reason
    def resize(**attrs: object) -> object:
        return helper.make_node("Resize", ["x", "", "s"], ["y"], **attrs)

    assert runtime_reason(resize(exclude_outside=1), {}) is not None  # nearest
    assert runtime_reason(resize(mode="linear", exclude_outside=1), {}) is not None
    assert runtime_reason(resize(mode="linear", exclude_outside=1, antialias=1), {}) is None
    assert runtime_reason(resize(mode="cubic", exclude_outside=1), {}) is None
    assert runtime_reason(resize(antialias=1), {}) is not None
    assert "only in mode linear or cubic" in refusal(
        "Resize", 18, {"attr:exclude_outside": "nondefault", "attr:mode": "default"})


def test_a_row_no_emission_on_its_input_can_take_reads_another_input() -> None:
    # emit_for_row's repick: while the emissions miss a level (a Conv group on an input of
    # one channel), every second emission reads the value repick gives
    import random

    from generators.names import Namer
    from generators.pooled_random import PooledRandom
    from generators.values import FLOAT

    rng = random.Random(0)
    b = GraphBuilder(rng, PooledRandom(rng), 18, Namer("plain", rng))
    one, four = b.graph_input(FLOAT, (1, 1, 5, 5)), b.graph_input(FLOAT, (1, 4, 5, 5))

    def misfits(b: GraphBuilder, start: int) -> int:
        return 0 if any(four.name in n.input for n in b.nodes[start:]) else 1

    def neg(b: GraphBuilder, x: object) -> object:
        return b.op("Neg", [x], FLOAT, x.shape)

    emit_for_row(b, neg, one, set(), None, misfits, lambda: four)
    assert [list(n.input) for n in b.nodes] == [[four.name]]
    emit_for_row(b, neg, one, set(), None, misfits)  # no repick: the input stays
    assert list(b.nodes[-1].input) == [one.name]


def test_a_motif_builds_its_window_for_the_level_the_row_gives() -> None:
    # slim-reshape-as Gathers each dim of a Shape: a Shape-15 start the edit alone gives
    # leaves Gather indices past its output; the motif reads the row's level
    # (GraphBuilder.planned) and gathers only the dims the Shape gives
    hints = pass_hints("onnxslim", "EliminationReshapeAs")
    draws = walked_draws("slim-reshape-as", hints, "Shape|attr:start", ("nondefault",))
    assert draws
    for seed, gm, _ in draws:
        starts = [a.i for n in gm.model.graph.node if n.op_type == "Shape"
                  for a in n.attribute if a.name == "start"]
        assert any(s >= 1 for s in starts), seed
        assert not any(n.startswith("Shape|attr:start") for v in gm.varied for n in v["notes"])
        cpu_session(gm.model).run(None, synthesize_inputs(gm.model, seed, gm.input_shapes))
    for _, gm, _ in walked_draws("slim-reshape-as", hints, "Shape|attr:start",
                                 ("absent",))[:4]:  # rows without a start: none made
        assert not any(n.op_type == "Shape" and a.name == "start"
                       for n in gm.model.graph.node for a in n.attribute)


def test_an_edge_axes_level_first_spells_the_nodes_own_axes_negative() -> None:
    # the same output whatever the shapes: Unsqueeze counts positions of its output
    types = {"x": helper.make_tensor_type_proto(1, [3, 4]),
             "y": helper.make_tensor_type_proto(1, [3, 1, 4])}
    node = helper.make_node("Unsqueeze", ["x"], ["y"], axes=[1])
    ctx = InputContext(node, None, types, {}, None)
    assert NODE_CANDIDATES[("Unsqueeze", "axes")](ctx, "edge")[0] == [-2]
    squeeze = helper.make_node("Squeeze", ["y"], ["x"], axes=[1])
    ctx = InputContext(squeeze, None, types, {}, None)
    assert NODE_CANDIDATES[("Squeeze", "axes")](ctx, "edge")[0] == [-2]


def test_squeeze_1_takes_no_edge_axes_and_squeeze_all_needs_known_dims() -> None:
    # Squeeze-1 / Unsqueeze-1: no negative axes; an empty list is a no-op to onnx and
    # squeezes every unit axis in onnxruntime
    assert "non-negative axes only" in refusal("Squeeze", 1, {"attr:axes": "edge"})
    assert "non-negative axes only" in refusal("Unsqueeze", 1, {"attr:axes": "edge"})
    assert refusal("Squeeze", 11, {"attr:axes": "edge"}) is None
    plan = motif_plan("squeeze-chain")
    assert any("non-negative axes only" in why for why in plan.infeasible["Squeeze"].values())
    # a Squeeze without axes on a symbolic batch dim (fed as 1) removes it when it runs
    sym = helper.make_tensor_type_proto(1, ["N", 1, 4])
    node = helper.make_node("Squeeze", ["x"], ["y"])
    assert "removes every dim that is 1" in runtime_reason(node, {"x": sym})
    assert runtime_reason(node, {"x": helper.make_tensor_type_proto(1, [2, 1, 4])}) is None
    assert runtime_reason(helper.make_node("Squeeze", ["x"], ["y"], axes=[1]),
                          {"x": sym}) is None


def test_slice_1_bounds_are_spelled_another_way_for_the_same_window() -> None:
    # starts counted from the end of the axis, an end before the dim likewise and an end at
    # it past the dim; nondefault: each bound's non-negative position
    types = {"x": helper.make_tensor_type_proto(1, [2, 6, 4])}
    node = helper.make_node("Slice", ["x"], ["y"], starts=[1, -3], ends=[6, 2], axes=[1, 2])
    ctx = InputContext(node, None, types, {}, None)
    assert NODE_CANDIDATES[("Slice", "starts")](ctx, "edge") == [[-5, -3]]
    assert NODE_CANDIDATES[("Slice", "starts")](ctx, "nondefault") == [[1, 1]]
    assert NODE_CANDIDATES[("Slice", "ends")](ctx, "edge") == [[HUGE_INT, -2]]
    assert NODE_CANDIDATES[("Slice", "ends")](ctx, "nondefault") == [[6, 2]]
    assert "non-negative axes only" in refusal("Slice", 1, {"attr:axes": "edge"})


def test_a_motif_of_variants_is_known_by_draws_aimed_at_each_anchor() -> None:
    # os-symbolic-shapes makes a Flatten, a Slice or a Squeeze per draw, three draws a
    # window: the plain probes all happened to make a Slice; a probe aimed at Flatten
    # makes none, so the walk aims steps at Slice too
    plan = motif_plan("os-symbolic-shapes")
    assert always_made("os-symbolic-shapes", *plan.opsets) == frozenset()
    assert {s.aim for s in walk_steps("os-symbolic-shapes")} == {"Flatten", "Slice", "Squeeze"}


def test_a_trans_a_edit_of_a_computed_operand_puts_a_transpose_before_the_gemm() -> None:
    # A computed (no constant to transpose): a Transpose feeds the Gemm, which reads it with
    # transA=1, so the product and the output shape stay; the model checks and runs
    hints = pass_hints("onnxruntime", "GemmActivationFusion")
    draws = walked_draws("ort-gemm-activation", hints, "Gemm|attr:transA", ("nondefault",))
    fed = 0
    for seed, gm, _ in draws:
        assert not any(n.startswith("Gemm|attr:transA") for v in gm.varied for n in v["notes"])
        nodes = {o: n for n in gm.model.graph.node for o in n.output}
        for g in (n for n in gm.model.graph.node if n.op_type == "Gemm"):
            t = nodes.get(g.input[0])
            fed += t is not None and t.op_type == "Transpose" and \
                any(a.name == "transA" and a.i == 1 for a in g.attribute)
        cpu_session(gm.model).run(None, synthesize_inputs(gm.model, seed, gm.input_shapes))
    assert draws and fed


def test_setting_allowzero_spells_the_dims_a_zero_copied() -> None:
    # with allowzero=1 a 0 in the shape is an empty dim: the edit writes the input's dim
    from generators.schema.apply import ATTR_ADAPTERS

    types = {"x": helper.make_tensor_type_proto(1, [2, 3, 4])}
    shape = numpy_helper.from_array(np.asarray([0, -1], np.int64), "s")
    node = helper.make_node("Reshape", ["x", "s"], ["y"])
    ctx = InputContext(node, None, types, {"s": shape}, None)
    adapt = ATTR_ADAPTERS[("Reshape", "allowzero")]
    got = adapt(ctx, helper.make_node("Reshape", ["x", "s"], ["y"], allowzero=1))
    assert got[1].tolist() == [2, -1]
    assert adapt(ctx, helper.make_node("Reshape", ["x", "s"], ["y"], allowzero=0)) == {}


def test_what_constant_of_shape_and_cast_like_cannot_hold_is_told() -> None:
    from onnx import TensorProto

    from generators.schema.levels import EDGE as EDGE_LEVEL
    from generators.schema.levels import classify

    assert "1 or more" in refusal("Upsample", 7, {"attr:scales": "edge"})
    assert "fmod=1" in refusal("Mod", 13, {"dtype:T": "float", "attr:fmod": "absent"})
    assert "one non-negative size per output" in refusal("Split", 13, {"attr:split": "edge"})
    assert refusal("Mod", 13, {"dtype:T": "int32", "attr:fmod": "absent"}) is None
    assert "makes float zeros" in refusal("ConstantOfShape", 20, {
        "attr:value": "absent", "dtype:T2": "int64"})
    assert refusal("ConstantOfShape", 20, {"attr:value": "absent", "dtype:T2": "float"}) is None
    assert "float 8" in refusal("CastLike", 19, {"attr:saturate": "default", "dtype:T2": "int8"})
    cast_like = helper.make_node("CastLike", ["x", "t"], ["y"], saturate=0)
    assert "saturate" in runtime_reason(cast_like, {
        "t": helper.make_tensor_type_proto(TensorProto.INT8, [1])})
    # a bfloat16 value is classified by its float value
    zero = helper.make_tensor("value", TensorProto.BFLOAT16, [1], [0.0])
    assert classify("ConstantOfShape", helper.make_attribute("value", zero), None) == EDGE_LEVEL


def test_a_level_the_pattern_pins_is_infeasible_with_the_motifs_reason() -> None:
    # ort-space-to-depth slices every second row and column: Slice's steps stay present
    plan = motif_plan("ort-space-to-depth")
    pinned = {p: why for p, why in plan.infeasible["Slice"].items()
              if ("in:steps", "absent") in p or ("in:steps", "empty") in p}
    assert pinned and all("every second row and column" in why for why in pinned.values())
    assert all(r.get("Slice|in:steps") in ("present", "n/a") for r in plan.rows)


def test_a_squeeze_without_axes_gets_the_unit_axes_it_drops_listed() -> None:
    types = {"x": helper.make_tensor_type_proto(1, [1, 3, 1]),
             "y": helper.make_tensor_type_proto(1, [3])}
    node = helper.make_node("Squeeze", ["x"], ["y"])
    ctx = InputContext(node, None, types, {}, None)
    assert NODE_CANDIDATES[("Squeeze", "axes")](ctx, "nondefault") == [[0, 2]]
    assert NODE_CANDIDATES[("Squeeze", "axes")](ctx, "edge") == [[-3, -1]]


def test_resize_takes_scales_or_sizes_for_the_output_it_has_and_flips_them_together() -> None:
    from generators.schema.apply import PROVIDERS, TOGETHER

    types = {"x": helper.make_tensor_type_proto(1, [1, 2, 3, 4]),
             "y": helper.make_tensor_type_proto(1, [1, 2, 6, 8])}
    node = helper.make_node("Resize", ["x", "", "s"], ["y"])
    ctx = InputContext(node, None, types, {}, None)
    assert PROVIDERS[("Resize", "scales")](ctx).tolist() == [1.0, 1.0, 2.0, 2.0]
    assert PROVIDERS[("Resize", "sizes")](ctx).tolist() == [1, 2, 6, 8]
    ctx = InputContext(helper.make_node("Resize", ["x", "", "s"], ["y"], axes=[2, 3]), None,
                       types, {}, None)
    assert PROVIDERS[("Resize", "sizes")](ctx).tolist() == [6, 8]
    assert TOGETHER["Resize"] == {"in:scales", "in:sizes"}
    assert "exactly one of its scales and sizes" in refusal(
        "Resize", 19, {"in:scales": "empty", "in:sizes": "absent"})
    assert refusal("Resize", 19, {"in:scales": "empty", "in:sizes": "present"}) is None
    assert "needs sizes" in refusal("Resize", 19, {
        "attr:keep_aspect_ratio_policy": "nondefault", "in:scales": "present"})


def test_a_constant_value_attribute_holds_the_value_the_constant_has() -> None:
    # a Constant's value attributes change as one step, each candidate in the form that
    # keeps the output's type and shape
    from generators.schema.apply import TOGETHER

    node = helper.make_node("Constant", [], ["c"], value_ints=[3, 4])
    ctx = InputContext(node, None, {}, {}, None)
    tensor = NODE_CANDIDATES[("Constant", "value")](ctx, "nondefault")[0]
    assert numpy_helper.to_array(tensor).tolist() == [3, 4] and tensor.data_type == 7
    assert NODE_CANDIDATES[("Constant", "value_ints")](ctx, "nondefault") == [[3, 4]]
    assert NODE_CANDIDATES[("Constant", "value_int")](ctx, "nondefault") == []  # not 0-D
    assert NODE_CANDIDATES[("Constant", "value_floats")](ctx, "nondefault") == []
    sparse = NODE_CANDIDATES[("Constant", "sparse_value")](ctx, "nondefault")[0]
    assert list(sparse.dims) == [2]
    assert {"attr:value", "attr:value_ints"} <= TOGETHER["Constant"]


def test_resize_11_empties_its_scales_once_sizes_is_listed_and_a_cropped_roi_is_float() -> None:
    from onnx import defs

    from generators.schema.apply import LISTED_ADAPTERS

    names = ["x", "roi", "s", "z"]
    ctx = InputContext(helper.make_node("Resize", names[:3], ["y"]), defs.get_schema(
        "Resize", 11), {}, {}, None)
    got = LISTED_ADAPTERS[("Resize", "sizes")](ctx, helper.make_node("Resize", names, ["y"]))
    assert got[2].shape == (0,)
    ctx13 = InputContext(ctx.node, defs.get_schema("Resize", 13), {}, {}, None)
    assert LISTED_ADAPTERS[("Resize", "sizes")](
        ctx13, helper.make_node("Resize", names, ["y"])) == {}
    crop = helper.make_node("Resize", names[:3], ["y"],
                            coordinate_transformation_mode="tf_crop_and_resize")
    double = {"roi": helper.make_tensor_type_proto(11, [8])}
    assert "roi" in runtime_reason(crop, double)
    assert runtime_reason(helper.make_node("Resize", names[:3], ["y"]), double) is None


def test_a_sequence_or_optional_holds_the_element_type_its_row_gives() -> None:
    # the retype cannot pass through a sequence or an optional: the motif casts in and out
    # (a row that gives the two ops of one sequence or optional two types is not held)
    for target, name, motif, key, first in (
            ("onnxsim", "eliminate_sequence_at_construct", "sim-sequence-construct",
             "SequenceAt|dtype:T", "SequenceConstruct|dtype:T"),
            ("onnxsim", "eliminate_optional_get_element", "sim-optional",
             "OptionalGetElement|dtype:V", "Optional|dtype:V")):
        draws = walked_draws(motif, pass_hints(target, name), key, ("int32", "bool"))
        assert draws
        for seed, gm, row in draws:
            if row.get(first) not in (row[key], "n/a"):
                continue
            assert not any(n.startswith(key) for v in gm.varied for n in v["notes"]), seed
            cpu_session(gm.model).run(None, synthesize_inputs(gm.model, seed,
                                                              gm.input_shapes))


def test_leaving_an_unused_optional_output_out_is_taken() -> None:
    # a Dropout's mask no node reads: the edit that leaves it out keeps the node's other
    # outputs, and the output it drops is no output to check
    hints = pass_hints("onnxscript", "RemoveUnusedNodesPass")
    draws = walked_draws("os-unused-outputs", hints, "Dropout|out:mask", ("absent",))
    assert draws
    for _, gm, _ in draws:
        assert not any(n.startswith("Dropout|out:mask=absent") for v in gm.varied
                       for n in v["notes"])


def test_a_bool_retyped_to_string_is_written_as_onnxruntime_writes_it() -> None:
    # onnxruntime's Cast writes a bool as "1" or "0" and parses only numerals back
    from onnx import TensorProto

    t = numpy_helper.from_array(np.array([True, False]), "b")
    assert numpy_helper.to_array(_converted(t, TensorProto.STRING)).tolist() == ["1", "0"]


def test_a_scatter_axis_edit_refits_its_constant_indices() -> None:
    from generators.schema.apply import ATTR_ADAPTERS

    types = {"x": helper.make_tensor_type_proto(1, [4, 2])}
    idx = numpy_helper.from_array(np.array([[3, 1]], np.int64), "i")
    node = helper.make_node("Scatter", ["x", "i", "u"], ["y"], axis=0)
    ctx = InputContext(node, None, types, {"i": idx}, None)
    got = ATTR_ADAPTERS[("Scatter", "axis")](ctx, helper.make_node(
        "Scatter", ["x", "i", "u"], ["y"], axis=1))
    assert got[1].tolist() == [[1, 1]]  # within the new axis's 2
    assert ATTR_ADAPTERS[("Scatter", "axis")](ctx, node) == {}  # fits already
    assert "axis within" in runtime_reason(
        helper.make_node("Scatter", ["x", "i", "u"], ["y"], axis=2), types)


def test_a_retyped_constant_anchor_is_converted_and_sparse_values_follow_the_target() -> None:
    # os-fold-constant-attrs' Constants hold value_float(s) and value_int(s): a row that
    # gives the anchor another element type converts it into a `value` tensor of that type
    # (before, it stayed float behind a Cast and the note said the retype was undone); a
    # sparse_value level is a limit of a target that loads no sparse tensor, and the levels
    # held only together with it carry that reason
    from generators.schema.apply import NO_SPARSE
    from generators.schema.limits import limit_of

    hints = pass_hints("onnxscript", "FoldConstantsPass")
    assert not hints.sparse
    draws = walked_draws("os-fold-constant-attrs", hints, "Constant|dtype:T", ("int16",))
    assert draws
    retyped = 0
    for _, gm, _row in draws:
        notes = [n for v in gm.varied for n in v["notes"]]
        assert not any("dtype:T=int16: the node is float" in n for n in notes), notes
        for note in notes:
            if "|attr:sparse_value=nondefault:" in note or "held only together with" in note:
                assert limit_of(note.split(": ", 1)[1]) == "target", note
        retyped += any(n.op_type == "Constant" and n.attribute[0].name == "value" and
                       n.attribute[0].t.data_type == 5 for n in gm.model.graph.node)
        assert not any(n.op_type == "Constant" and n.attribute[0].name == "sparse_value"
                       for n in gm.model.graph.node)
    assert retyped
    assert limit_of(NO_SPARSE) == "target"


def test_a_sparse_constant_window_runs_in_onnxruntime_unfetched() -> None:
    # onnxruntime refuses a session that fetches a sparse Constant's output ("Missing
    # Input"), which a model reads through its consumers only: the window's run leaves it
    # out of the outputs
    import random

    from generators.builder import sparse_tensor
    from generators.names import Namer
    from generators.pooled_random import PooledRandom
    from generators.schema.apply import Mark, ort_refusal
    from generators.values import FLOAT

    rng = random.Random(0)
    b = GraphBuilder(rng, PooledRandom(rng), 13, Namer("plain", rng))
    mark = Mark.of(b)
    x = b.graph_input(FLOAT, (2, 2))
    c = b.node("Constant", [], sparse_value=sparse_tensor(np.ones((2, 2), np.float32), "w"))[0]
    b.op("Mul", [x, c], FLOAT, (2, 2))
    assert ort_refusal(b, mark) is None


def test_a_string_constant_value_holds_its_strings() -> None:
    node = helper.make_node("Constant", [], ["c"], value_strings=[b"a", b"bc"])
    ctx = InputContext(node, None, {}, {}, None)
    tensor = NODE_CANDIDATES[("Constant", "value")](ctx, "nondefault")[0]
    assert tensor.data_type == 8 and list(tensor.string_data) == [b"a", b"bc"]


def test_the_plan_ties_every_variant_an_aimed_probe_makes() -> None:
    # sim-lp-normalization divides by a ReduceL2 or (a third of its draws) a ReduceL1:
    # aimed at ReduceL1 the draw makes it, so the plan's ties hold ReduceL1 with the Div
    # and no row gives the two different types (its walk covered 0.64 of the pairs while
    # they did); a motif that draws its variant without reading the aim is probed again
    # until it makes the aimed op (ort-quant-after-act's Clip)
    from generators.schema.plan import _made, probe_windows

    plan = motif_plan("sim-lp-normalization")
    aimed = [plan.rows[s.row] for s in walk_steps("sim-lp-normalization")]
    assert sum(s.aim == "ReduceL1" for s in walk_steps("sim-lp-normalization")) >= 10
    for step, row in zip(walk_steps("sim-lp-normalization"), aimed, strict=True):
        assert row[f"{step.aim}|dtype:T"] == row["Div|dtype:T"], (step, row)
    quant = motif_plan("ort-quant-after-act")
    assert any("Clip" in _made(w) for _, w in probe_windows("ort-quant-after-act",
                                                            *quant.opsets, aimed=True))


def test_an_optional_without_input_is_drawn_typed_and_tested_alone() -> None:
    # a row that leaves Optional's input out gets the empty typed Optional read by
    # OptionalHasElement only (an OptionalGetElement of it fails when it runs); its type
    # attribute said aloud is the type of the input it has; neither, or an empty-named
    # input, no model holds
    draws = walked_draws("sim-optional", pass_hints("onnxsim", "eliminate_optional_get_element"),
                         "Optional|in:input", ("absent",))
    assert draws
    for _, gm, _row in draws:
        empty = [n for n in gm.model.graph.node if n.op_type == "Optional" and not n.input]
        assert empty and all(n.attribute[0].name == "type" for n in empty)
        cpu_session(gm.model).run(None, synthesize_inputs(gm.model, 0))
    node = helper.make_node("Optional", ["x"], ["o"])
    types = {"x": helper.make_tensor_type_proto(10, [2, 3])}
    got = NODE_CANDIDATES[("Optional", "type")](InputContext(node, None, types, {}, None),
                                                "nondefault")
    assert got[0].tensor_type.elem_type == 10 and not got[0].tensor_type.HasField("shape")
    assert "one of them is given" in refusal("Optional", 15, {"in:input": "absent",
                                                              "attr:type": "absent"})
    assert "Input type is null" in refusal("Optional", 18, {"in:input": "empty"})
    assert refusal("Optional", 18, {"in:input": "absent", "attr:type": "nondefault"}) is None


@pytest.mark.parametrize(("target", "pass_name", "motif", "key", "levels"), [
    # the ids of a graph input (fed 0 to 3) index a (4, 4) table on either axis
    ("onnxoptimizer", "rewrite_input_dtype", "int64-input", "Gather|attr:axis",
     ("nondefault",)),
    # the Range's indices cover the dim of the axis the row gives the Gather
    ("onnxruntime", "GatherToSliceFusion", "ort-range-gather", "Gather|attr:axis",
     ("absent", "default", "nondefault")),
    # the indices pick among the dims a Shape with a start gives
    ("onnxoptimizer", "eliminate_shape_gather", "shape-gather", "Shape|attr:start",
     ("nondefault",)),
    # a (1, 2d) constant split in two (1, d) halves on its second axis
    ("onnxscript", "FoldConstantsPass", "os-fold-limits", "Split|attr:axis", ("nondefault",)),
    # a unit dim put in front of a rank-2 input, whose only non-default axis of a
    # QuantizeLinear or Softmax-11 (default 1) would be out of range
    ("onnxruntime", "ReluQuantRewrite", "ort-quant-after-act", "QuantizeLinear|attr:axis",
     ("nondefault",)),
    ("version-converter", "Hardmax 12->13", "oc-softmax-axis", "Softmax|attr:axis",
     ("nondefault",)),
    # rotate_half's Slices to a computed half: without axes, bounds over all four axes
    ("onnxruntime-transformers", "enable_rotary_embeddings", "tb-rotary", "Slice|in:axes",
     ("absent", "empty")),
])
def test_a_motif_builds_its_window_for_the_axis_its_row_gives(
        target: str, pass_name: str, motif: str, key: str, levels: tuple[str, ...]) -> None:
    draws = walked_draws(motif, pass_hints(target, pass_name), key, levels)
    assert len(draws) >= 3
    op, factor = key.split("|")
    for seed, gm, row in draws:
        notes = [n for v in gm.varied for n in v["notes"]]
        assert not any(n.startswith(f"{key}=") for n in notes), (seed, row[key], notes)


def test_an_axis_candidate_names_an_axis_of_the_input() -> None:
    # QuantizeLinear's axis (default 1) names an axis of its input, [-r, r) (its operator
    # docs): onnxruntime ran a per-tensor one with axis 2 on a rank-2 input, which no valid
    # model holds; Flatten's axis may equal the rank
    from onnx import AttributeProto, defs

    from generators.schema.apply import FACTOR_PREVIEWS
    from generators.schema.levels import candidates

    assert candidates("QuantizeLinear", "axis", AttributeProto.INT, "nondefault", 1, 1, 2,
                      None) == []
    assert candidates("QuantizeLinear", "axis", AttributeProto.INT, "nondefault", 1, 1, 3,
                      None) == [2]
    assert 2 in candidates("Flatten", "axis", AttributeProto.INT, "nondefault", 1, 1, 2, None)
    # a Squeeze's axes are axes of its input, each once (the generic lists are sizes: [1]
    # on a rank-1 input made onnxruntime refuse os-squeeze-reshape's draws)
    assert candidates("Squeeze", "axes", AttributeProto.INTS, "nondefault", None, None, 1,
                      None) == [[0]]
    assert [1] in candidates("Unsqueeze", "axes", AttributeProto.INTS, "nondefault", None,
                             None, 1, None)
    node = helper.make_node("QuantizeLinear", ["x", "s"], ["y"])
    schema = defs.get_schema("QuantizeLinear", 21)
    for rank, fits in ((2, False), (3, True)):
        types = {"x": helper.make_tensor_type_proto(1, [2] * rank)}
        ctx = InputContext(node, schema, types, {}, None)
        assert FACTOR_PREVIEWS["attr:axis"](ctx, "nondefault") is fits


def test_every_walk_step_of_space_to_depth_draws_it() -> None:
    # ort-space-to-depth slices every second row and column: an input of one row or column
    # is tiled to two (the motif gave up on it, and a third of its walk drew nothing)
    hints = pass_hints("onnxruntime", "SliceConcatToSpaceToDepthFusion")
    seeds = list(walk_seeds("ort-space-to-depth", "v2", hints).values())
    drawn = [any(v["motif"] == "ort-space-to-depth" for v in generate(s, "v2", hints).varied)
             for s in seeds]
    assert len(seeds) >= 40 and all(drawn), drawn


def test_an_output_of_unknown_shape_may_be_unused_or_read_but_not_a_graph_output() -> None:
    # tb-embed-layer-norm's LayerNormalization reads a value inference gives no shape to,
    # so its Mean and InvStdDev get none: left unused or read by an Identity they stand
    # (before, every such edit was refused); only a graph output needs the shape
    draws = walked_draws("tb-embed-layer-norm", pass_hints("onnxsim", "fuse_attention"),
                         "LayerNormalization|out:Mean", ("unused", "consumed", "output"))
    assert draws
    refused = [n.split(":", 1)[1].split(":")[0] for _, gm, _ in draws for v in gm.varied
               for n in v["notes"] if n.endswith("the new output's shape is not inferred")]
    assert refused and all(level.endswith("=output") for level in refused), refused


def test_a_quantizer_without_zero_point_takes_its_type_once_the_zero_point_is_listed() -> None:
    # a QuantizeLinear without y_zero_point makes uint8 whatever its output is retyped to:
    # the retype waits until the row's y_zero_point edit lists one (of the row's type,
    # before: uint8, which undid the retype); a float 8 row gets the zero point 0, the
    # only one onnxruntime's DequantizeLinear takes for float 8
    draws = walked_draws("ort-quant-after-act", pass_hints("onnxruntime", "ReluQuantRewrite"),
                         "QuantizeLinear|dtype:T2",
                         ("float8e4m3fn", "float8e4m3fnuz", "float8e5m2", "float8e5m2fnuz"))
    assert len(draws) >= 3
    held = 0
    for seed, gm, _row in draws:
        notes = [n for v in gm.varied for n in v["notes"]]
        assert not any("QuantizeLinear|dtype:T2" in n and "the node is uint8" in n
                       for n in notes), (seed, notes)
        cpu_session(gm.model).run(None, synthesize_inputs(gm.model, seed, gm.input_shapes))
        held += not any("QuantizeLinear|dtype:T2" in n for n in notes)
    assert held >= 3, held


def test_a_resize_with_exclude_outside_resizes_cubic_where_its_data_is_float() -> None:
    # onnxruntime's Resize takes exclude_outside only in mode cubic (or linear with
    # antialias), and runs cubic on float and float16 data only
    from generators.schema.apply import SETTLERS

    types = {"x": helper.make_tensor_type_proto(1, [1, 1, 2, 3]),
             "q": helper.make_tensor_type_proto(2, [1, 1, 2, 3])}
    node = helper.make_node("Resize", ["x", "", "", "s"], ["y"], mode="linear",
                            exclude_outside=1)
    SETTLERS["Resize"](node, types)
    assert [a.s for a in node.attribute if a.name == "mode"] == [b"cubic"]
    ints8 = helper.make_node("Resize", ["q", "", "", "s"], ["y"], mode="linear",
                             exclude_outside=1)
    SETTLERS["Resize"](ints8, types)
    assert [a.s for a in ints8.attribute if a.name == "mode"] == [b"linear"]
    cubic = helper.make_node("Resize", ["q", "", "", "s"], ["y"], mode="cubic")
    assert "float and float16 data only" in runtime_reason(cubic, types)
    assert "which it runs on float data only" in refusal(
        "Resize", 13, {"attr:exclude_outside": "nondefault", "dtype:T1": "uint8"})
    assert refusal("Resize", 19, {"attr:exclude_outside": "nondefault", "dtype:T1": "uint8",
                                  "attr:antialias": "nondefault"}) is None


def test_a_motif_keeps_its_constant_anchors_under_an_exporter_that_lifts_constants() -> None:
    # an exporter profile that keeps its constants as initializers lifted the Constant
    # nodes of os-fold-constant-attrs too, whose pairs then went unmeasured
    hints = pass_hints("onnxscript", "FoldConstantsPass")
    for seed in walk_seeds("os-fold-constant-attrs", "v2", hints).values():
        gm = generate(seed, "v2", hints)
        for motif, start, end in gm.spans:
            if motif == "os-fold-constant-attrs":
                ops = [n.op_type for n in gm.model.graph.node[start:end]]
                assert "Constant" in ops, (seed, ops)
