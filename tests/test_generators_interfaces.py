"""Interface forms (generators/interfaces.py): each one, forced on generated models, gives a
model that passes the checker (full_check), runs in onnxruntime on optfuzz's own feeds, and
holds the form in its proto (checked here by hand, not by the module's detectors); the
harness feeds sequence and optional inputs, leaves initializers listed as inputs unfed,
compares sequence and optional outputs, and stores them in bundles."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
import pytest

from generators.exporters import EXPORTERS
from generators.generate import GeneratedModel, generate
from generators.inputs import synthesize_inputs
from generators.interfaces import INTERFACES, forms_of

ROOT = Path(__file__).resolve().parents[1]


def _dims(model: Any) -> list[Any]:
    return [d for vi in model.graph.input if vi.type.HasField("tensor_type")
            for d in vi.type.tensor_type.shape.dim]


def _params(model: Any) -> list[str]:
    return [d.dim_param for d in _dims(model) if d.dim_param]


def _listed_initializers(model: Any) -> list[str]:
    inputs = {vi.name for vi in model.graph.input}
    return [t.name for t in model.graph.initializer if t.name in inputs]


def _io(model: Any, where: str, kind: str) -> list[Any]:
    values = model.graph.input if where == "input" else model.graph.output
    return [vi for vi in values if vi.type.HasField(kind)]


def _exporter_check(name: str) -> Callable[[Any], bool]:
    e = EXPORTERS[name]
    return lambda m: m.producer_name == e.producer and m.producer_version in e.versions \
        and m.domain == e.domain and (not e.graph_doc or m.graph.doc_string == e.graph_doc)


#: form -> what its proto must hold, written out here (independent of the detectors).
HOLDS: dict[str, Callable[[Any], bool]] = {
    **{f"exporter-{name}": _exporter_check(name) for name in EXPORTERS},
    "seq-input": lambda m: any(
        vi.type.sequence_type.elem_type.tensor_type.HasField("shape")
        for vi in _io(m, "input", "sequence_type")),
    "seq-input-unranked": lambda m: any(
        not vi.type.sequence_type.elem_type.tensor_type.HasField("shape")
        for vi in _io(m, "input", "sequence_type")),
    "seq-output": lambda m: bool(_io(m, "output", "sequence_type")),
    "optional-input": lambda m: bool(_io(m, "input", "optional_type"))
    and any(n.op_type == "OptionalGetElement" for n in m.graph.node),
    "optional-input-absent": lambda m: bool(_io(m, "input", "optional_type")) and any(
        n.op_type == "If" and "OptionalGetElement" in str(n.attribute) for n in m.graph.node),
    "optional-output": lambda m: bool(_io(m, "output", "optional_type")),
    "overridable-initializers": lambda m: m.ir_version >= 4 and bool(_listed_initializers(m)),
    "ir3-initializer-inputs": lambda m: m.ir_version == 3 and len(m.graph.initializer) > 0
    and len(_listed_initializers(m)) == len(m.graph.initializer),
    "dim-param-shared": lambda m: any(_params(m).count(p) >= 2 for p in _params(m)),
    "dim-param-distinct": lambda m: len(set(_params(m))) >= 2,
    "dim-unknown": lambda m: any(not d.HasField("dim_value") and not d.HasField("dim_param")
                                 for d in _dims(m)),
    "dim-param-expression": lambda m: any(c in p for p in _params(m) for c in "+*/("),
}


def test_every_form_has_a_check_here() -> None:
    assert set(HOLDS) == set(INTERFACES)


def _forced(name: str, start: int = 0, tries: int = 60) -> GeneratedModel:
    """A generated model that took form ``name``, from the first seed at ``start`` or after
    that gives one (opset 7 for the IR 3 form, the newest otherwise, so that sequences and
    optionals exist)."""
    for seed in range(start, start + tries):
        if name == "ir3-initializer-inputs":
            gm = generate(seed, opset=7)
            if gm.model.graph.initializer:
                return gm
            continue
        gm = generate(seed, opset=21, interfaces=[name])
        if name in gm.interfaces:
            return gm
    raise AssertionError(f"no seed in {start}..{start + tries - 1} takes {name}")


def _run(model: Any, feeds: dict[str, Any]) -> list[Any]:
    session = ort.InferenceSession(model.SerializeToString(),
                                   providers=["CPUExecutionProvider"])
    return session.run(None, feeds)


@pytest.mark.parametrize("name", list(INTERFACES))
def test_form_is_valid_runs_and_is_present(name: str) -> None:
    for gm in (_forced(name), _forced(name, start=100)):
        onnx.checker.check_model(gm.model, full_check=True)
        assert HOLDS[name](gm.model), name
        assert name in forms_of(gm.model)
        feeds = synthesize_inputs(gm.model, gm.seed, gm.input_shapes)
        outputs = _run(gm.model, feeds)
        assert len(outputs) == len(gm.model.graph.output)


def test_forms_draw_from_their_own_stream(monkeypatch: pytest.MonkeyPatch) -> None:
    """A model that draws no form (and keeps its name style) is the model generator v2
    built before the forms came (v2 with the forms' scale 0), byte for byte; generation
    stays a pure function of the seed."""
    from dataclasses import replace

    from generators.recipe import RECIPES

    drawn = {seed: generate(seed) for seed in range(60)}
    assert all(generate(s).model.SerializeToString() == gm.model.SerializeToString()
               for s, gm in list(drawn.items())[:10])
    monkeypatch.setitem(RECIPES, "v2", replace(RECIPES["v2"], interfaces=0.0))
    plain = [s for s, gm in drawn.items() if not gm.interfaces and
             gm.name_style != "torch_dynamo"]
    assert len(plain) >= 10
    for seed in plain:
        before = generate(seed)
        assert before.model.SerializeToString() == drawn[seed].model.SerializeToString()


def test_symbols_name_one_size_and_feeds_follow_the_declaration() -> None:
    for name in ("dim-param-shared", "dim-param-distinct", "dim-param-expression",
                 "dim-unknown"):
        for seed in range(30):
            gm = generate(seed, opset=17, interfaces=[name])
            feeds = synthesize_inputs(gm.model, seed, gm.input_shapes)
            sizes: dict[str, set[int]] = {}
            for vi in gm.model.graph.input:
                if vi.name not in feeds or not vi.type.HasField("tensor_type"):
                    continue
                dims = vi.type.tensor_type.shape.dim
                assert len(dims) == feeds[vi.name].ndim
                for d, n in zip(dims, feeds[vi.name].shape, strict=True):
                    if d.HasField("dim_value"):
                        assert d.dim_value == n
                    elif d.dim_param:
                        sizes.setdefault(d.dim_param, set()).add(n)
            assert all(len(s) == 1 for s in sizes.values()), sizes


def test_sequence_inputs_are_fed_lists_of_the_recorded_length() -> None:
    gm = _forced("seq-input")
    feeds = synthesize_inputs(gm.model, 0, gm.input_shapes)
    (seq,) = _io(gm.model, "input", "sequence_type")
    assert isinstance(feeds[seq.name], list)
    assert len(feeds[seq.name]) == gm.input_shapes[seq.name][0]
    assert all(a.shape == tuple(gm.input_shapes[seq.name][1:]) for a in feeds[seq.name])


def test_an_absent_optional_input_is_fed_none_and_runs() -> None:
    gm = _forced("optional-input-absent")
    feeds = synthesize_inputs(gm.model, 0, gm.input_shapes)
    (opt,) = _io(gm.model, "input", "optional_type")
    assert feeds[opt.name] is None
    assert all(o is not None for o in _run(gm.model, feeds))


def test_initializers_listed_as_inputs_are_not_fed_and_keep_their_values() -> None:
    gm = _forced("overridable-initializers")
    listed = set(_listed_initializers(gm.model))
    feeds = synthesize_inputs(gm.model, 0, gm.input_shapes)
    assert listed and not listed & set(feeds)
    unlisted = onnx.ModelProto()
    unlisted.CopyFrom(gm.model)
    kept = [vi for vi in unlisted.graph.input if vi.name not in listed]
    del unlisted.graph.input[:]
    unlisted.graph.input.extend(kept)
    for a, b in zip(_run(gm.model, feeds), _run(unlisted, feeds), strict=True):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_sequence_and_optional_outputs_compare_element_by_element() -> None:
    from oracles.base import Outcome
    from oracles.outputs import output_mismatch

    one, two = np.ones((2, 3), np.float32), np.full((2, 3), 2.0, np.float32)

    def mismatch(expected: Any, actual: Any) -> list[Any]:
        return output_mismatch(Outcome("ok", "compare", expected={"y": expected},
                                       actual={"y": actual}))

    assert mismatch([one, two], [one, two.copy()]) == []
    assert mismatch(None, None) == []
    (wrong,) = mismatch([one, two], [one, one])
    assert "element 1" in wrong.message and wrong.detail["kind"] == "values"
    assert wrong.detail["dtype"] == "seq(float32)"
    assert mismatch([one], [one, one])[0].detail["kind"] == "shape"
    assert mismatch(None, one)[0].detail["kind"] == "shape"
    assert mismatch(one, [one])[0].detail["kind"] == "shape"


def test_sequence_and_optional_values_survive_an_npz_archive(tmp_path: Path) -> None:
    from fuzzer.store.npz import npz_bytes, read_npz

    values = {"a:0": np.arange(3.0), "s": [np.ones(2), np.zeros(3)], "e": [], "o": None}
    path = tmp_path / "v.npz"
    path.write_bytes(npz_bytes(values))
    back = read_npz(path)
    assert list(back) == list(values)
    np.testing.assert_array_equal(back["a:0"], values["a:0"])
    assert [list(x) for x in back["s"]] == [[1.0, 1.0], [0.0, 0.0, 0.0]]
    assert back["e"] == [] and back["o"] is None
    with np.load(io.BytesIO(path.read_bytes()), allow_pickle=False) as npz:
        assert all(npz[k].dtype != object for k in npz.files)


@pytest.mark.parametrize("form", ["seq-input", "seq-output", "optional-input",
                                  "optional-input-absent", "optional-output",
                                  "overridable-initializers"])
def test_a_case_with_the_form_runs_through_the_pipeline(form: str) -> None:
    """A generated case that asks for the form (``with_interfaces``) goes through the
    worker's pipeline: materialized, fed, run before and after the fake target's
    ``leave-dead`` pass (a dead Identity: the model changes, its outputs do not), compared
    without an output mismatch."""
    from fuzzer.execution.case import TestCase
    from fuzzer.execution.pipeline import run_case
    from generators.materialize import materialize

    sources = ({"kind": "generated", "seed": seed, "opset": 21, "with_interfaces": [form]}
               for seed in range(60))
    source = next(s for s in sources if form in materialize(s, 0, None).provenance[
        "interfaces"])
    result = run_case(TestCase("fake", {"passes": ["leave-dead"]}, source, keep=True))
    assert result.unusable is None, result.unusable
    assert not [f for f in result.findings if f.symptom == "output-mismatch"], result.findings
    assert form in result.source["interfaces"]
    arts = result.artifacts
    assert arts is not None and arts.expected is not None and arts.actual is not None
    assert arts.optimized is not None and arts.optimized != arts.model
    kinds = {type(v) for v in [*arts.expected.values(), *arts.feeds.values()]}
    if form.startswith("seq"):
        assert list in kinds
    if form == "optional-input-absent":
        assert any(v is None for v in arts.feeds.values())


@pytest.mark.slow
def test_fake_campaign_with_interface_forms(tmp_path: Path) -> None:
    """30 cases of a campaign on the fake target, whose models draw interface forms, run
    without a finding that could not be recorded; some bundle's model has a form."""
    out = tmp_path / "crashes"
    proc = subprocess.run(
        [sys.executable, "-m", "fuzzer", "fuzz", "--target", "fake", "--passes",
         "drop-node,bad-unary,leave-dead", "--fixed-passes", "--source", "generated",
         "--max-cases", "30", "--jobs", "2", "--reduce-seconds", "10", "--out", str(out),
         "--quiet", "--timeout", "5"],
        env=dict(os.environ, PYTHONPATH=str(ROOT)), capture_output=True, text=True,
        timeout=300)
    assert proc.returncode in (0, 1), proc.stdout[-2000:] + proc.stderr[-2000:]
    log = (out / "campaign.log").read_text()
    assert "finding not recorded" not in log, log[-2000:]
    metas = [json.loads(p.read_text()) for p in out.glob("*/meta.json")]
    assert metas
    forms = [f for p in out.glob("*/original.onnx") for f in forms_of(onnx.load(p))]
    assert forms, "no bundle's model has an interface form"


def test_reduction_shrinks_tensor_inputs_and_leaves_sequence_feeds_alone() -> None:
    from fuzzer.reduce.candidate import Built
    from fuzzer.reduce.edits import shrink_edits

    gm = _forced("seq-input")
    feeds = synthesize_inputs(gm.model, 0, gm.input_shapes)
    (seq,) = _io(gm.model, "input", "sequence_type")
    for edit in shrink_edits(Built(gm.model, feeds)):
        shrunk = edit(Built(gm.model, feeds))
        if shrunk is not None:
            assert shrunk.feeds[seq.name] is feeds[seq.name]


def test_report_table_shows_sequence_elements_and_empty_optionals() -> None:
    from fuzzer.report.expected_actual import output_table

    one = np.ones(2, np.float32)
    table = output_table({"s": [one, one], "o": None}, {"s": [one, one * 2], "o": None})
    assert "`s::seq:1`" in table and "`o::none`" in table


def test_spans_follow_the_nodes_an_exporter_moves() -> None:
    """Exporter forms take Constant nodes out (into initializers) or put Constant nodes at
    the head (from small initializers): each motif span still covers the nodes of its draw
    (Constant nodes aside), as in the same model without forms."""
    seen = set()
    for seed in range(80):
        for name in ("exporter-tf2onnx", "exporter-torchscript"):
            gm = generate(seed, interfaces=[name])
            if name not in gm.interfaces or not gm.spans:
                continue
            base = generate(seed, interfaces=[])
            if len(gm.model.graph.node) != len(base.model.graph.node):
                seen.add(name)
            for (_, s, e), (_, s0, e0) in zip(gm.spans, base.spans, strict=True):
                ops = [n.op_type for n in gm.model.graph.node[s:e] if n.op_type != "Constant"]
                was = [n.op_type for n in base.model.graph.node[s0:e0]
                       if n.op_type != "Constant"]
                assert ops == was, (seed, name)
    assert seen == {"exporter-tf2onnx", "exporter-torchscript"}


@pytest.mark.parametrize("form", ["seq-input", "optional-input-absent", "optional-output"])
def test_mutation_checks_run_models_with_sequence_and_optional_inputs(form: str) -> None:
    """The mutators' run check (generators/mutate/check.py) feeds such models as the
    campaign does, with their own feeds or synthesized ones."""
    from generators.mutate.check import run_problem

    gm = _forced(form)
    assert run_problem(gm.model) is None
    assert run_problem(gm.model, synthesize_inputs(gm.model, 0, gm.input_shapes)) is None
