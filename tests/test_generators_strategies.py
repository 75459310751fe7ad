"""The public Hypothesis strategies: models are valid, and shrinking reaches small models."""

from __future__ import annotations

import onnx
from hypothesis import HealthCheck, find, given, settings

from generators.strategies import generated_models, models_with_inputs, onnx_models, opsets


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(models_with_inputs(opset=opsets(11, 21)))
def test_drawn_models_pass_the_checker_and_have_feeds(case) -> None:
    model, feeds = case
    onnx.checker.check_model(model, full_check=True)
    (imp,) = [o for o in model.opset_import if o.domain == ""]
    assert 11 <= imp.version <= 21
    assert set(feeds) <= {i.name for i in model.graph.input}


@settings(max_examples=20, deadline=None)
@given(onnx_models(generator="v1", passes=["fuse_bn_into_conv"]))
def test_v1_models_from_strategy_are_valid(model) -> None:
    onnx.checker.check_model(model, full_check=True)


def test_shrinking_finds_a_small_model_with_a_conv() -> None:
    gm = find(generated_models(max_nodes=10),
              lambda g: any(n.op_type == "Conv" for n in g.model.graph.node),
              settings=settings(max_examples=500, deadline=None, database=None,
                                derandomize=True))
    # shrunk to one motif's draw and nothing around it (which motif holds the smallest
    # Conv depends on the library's order: 4 nodes once, 7 with os-conv-affine's bias)
    ((_, start, end),) = gm.spans
    assert (start, end) == (0, len(gm.model.graph.node)) and end <= 10
