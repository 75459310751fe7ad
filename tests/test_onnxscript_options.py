"""The onnxscript target's ``options``: keyword arguments of ``onnxscript.optimizer.optimize``
at non-default values, which a quarter of the drawn configurations set, which repro.py
replays exactly, and which localization may drop; and the ``ort_fusions`` rule set, the one
step ``optimize_for_ort`` with its own options."""

from __future__ import annotations

import contextlib
import io
import random

import onnx
import pytest

pytest.importorskip("onnxscript")

import onnxscript.optimizer  # noqa: E402

from fuzzer.targets import get_target  # noqa: E402
from fuzzer.targets.onnxscript.rules import ORT_FUSIONS, ORT_STEP  # noqa: E402
from fuzzer.targets.onnxscript.target import OPTIONS, ORT_OPTIONS  # noqa: E402
from generators.generate import generate  # noqa: E402


@pytest.fixture(scope="module")
def target():
    return get_target("onnxscript")


def test_a_quarter_of_the_configurations_set_options(target) -> None:
    rng = random.Random(0)
    drawn = [target.configurations(rng, None) for _ in range(800)]
    plain = [c for c in drawn if c["rule_set"] != ORT_FUSIONS]
    with_options = [c for c in plain if c.get("options")]
    assert 0.15 * len(plain) <= len(with_options) <= 0.35 * len(plain)
    for config in with_options:
        assert 1 <= len(config["options"]) <= 2
        assert all(value in OPTIONS[key] for key, value in config["options"].items())
    ort = [c for c in drawn if c["rule_set"] == ORT_FUSIONS]
    assert 0.1 * len(drawn) <= len(ort) <= 0.3 * len(drawn)
    assert all(c["passes"] is None for c in ort)
    assert all(value in ORT_OPTIONS[key] for c in ort
               for key, value in (c.get("options") or {}).items())


def test_ort_fusions_is_optimize_for_ort(target) -> None:
    """The ``ort_fusions`` rule set runs ``optimize_for_ort`` as one step (with its
    options), and repro.py replays it."""
    import onnx_ir as ir
    from onnxscript.rewriter.ort_fusions import optimize_for_ort

    assert target.steps_of(ORT_FUSIONS) == [ORT_STEP]
    assert ORT_STEP in target.available_passes()
    for options in ({}, {"debug": True, "clear_metadata": True}):
        config = {"rule_set": ORT_FUSIONS, "passes": None, "options": options}
        for seed in range(3):
            model = generate(seed, passes=target.generation_hints(config)).model
            model_ir = ir.serde.deserialize_model(
                onnx.ModelProto.FromString(model.SerializeToString()))
            with contextlib.redirect_stdout(io.StringIO()):
                optimize_for_ort(model_ir, **options)
                got = target.optimize(model, config).SerializeToString()
                namespace = {"model": onnx.ModelProto.FromString(model.SerializeToString()),
                             "onnx": onnx}
                exec(target.repro_snippet(config), namespace)
            assert got == ir.serde.serialize_model(model_ir).SerializeToString()
            assert namespace["optimized"].SerializeToString() == got
    off = target.optimize(model, target.with_passes({"rule_set": ORT_FUSIONS, "passes": None},
                                                    []))
    assert [n.op_type for n in off.graph.node] == [n.op_type for n in model.graph.node]
    assert target.oracle_context({"rule_set": ORT_FUSIONS, "passes": None})["cleanup_ran"]


def test_a_full_step_list_with_options_is_optimize_with_them(target) -> None:
    config = {"rule_set": "default", "passes": None,
              "options": {"input_size_limit": 4, "num_iterations": 1}}
    assert target.runs_optimize(config)
    for seed in range(4):
        model = generate(seed, passes=["FoldConstantsPass"]).model
        expected = onnxscript.optimizer.optimize(
            onnx.ModelProto.FromString(model.SerializeToString()), input_size_limit=4,
            num_iterations=1)
        assert target.optimize(model, config).SerializeToString() == \
            expected.SerializeToString()


def test_repro_snippet_replays_options(target) -> None:
    rng = random.Random(7)
    names = target.steps_of("common")
    configs = [{"rule_set": "default", "passes": None,
                "options": {"onnx_shape_inference": False, "output_size_limit": 4}},
               {"rule_set": "common", "passes": sorted(rng.sample(names, 25), key=names.index),
                "options": {"stop_if_no_change": False, "input_size_limit": 64}}]
    for seed in range(3):
        model = generate(seed, passes=["FoldConstantsPass"]).model
        for config in configs:
            namespace = {"model": onnx.ModelProto.FromString(model.SerializeToString()),
                         "onnx": onnx}
            exec(target.repro_snippet(config), namespace)
            assert namespace["optimized"].SerializeToString() == \
                target.optimize(model, config).SerializeToString()


def test_options_are_a_relaxation_and_named_in_the_phrase(target) -> None:
    config = {"rule_set": "default", "passes": None, "options": {"num_iterations": 3}}
    assert target.relaxations(config) == {"options": {"rule_set": "default", "passes": None}}
    assert target.relaxations({"rule_set": "default", "passes": None}) == {}
    assert "num_iterations=3" in target.config_phrase(config)
