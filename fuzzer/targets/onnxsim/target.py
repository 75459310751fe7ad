"""Target adapter for onnx-simplifier (``onnxsim.simplify``,
https://github.com/daquexian/onnx-simplifier).

A configuration is ``{"passes": [names] | None}``: the rewrites left enabled (None: all of
them, what a user gets without options). The names are onnxsim's own
(:mod:`fuzzer.targets.onnxsim.passes`): its two stages ``shape_inference`` and
``constant_folding``, then the optimizer passes of ``--list-default-optimizers`` as
``simplify`` runs them. ``optimize`` turns the configuration into ``simplify``'s own
switches:

- every optimizer pass not enabled goes into ``skipped_optimizers`` (``fuse_bn_into_conv``
  through ``skip_fuse_bn=True``); with none enabled, ``perform_optimization=False``;
- ``skip_shape_inference`` / ``skip_constant_folding`` where those stages are not enabled;
- ``check_n=0`` (onnxsim's own random-input comparison is not the oracle: optfuzz compares
  in onnxruntime at ``ORT_DISABLE_ALL`` as for every target), ``certify=False`` (its Z3
  proof is opt-in in effect: it needs z3-solver), ``tensor_size_threshold="1MB"``
  (``--no-large-tensor 1MB``: the default, 1.5GB, folds the weights that the onnx wheel's
  "light" models rebuild with ConstantOfShape into hundreds of megabytes, longer than a
  case's timeout; onnxsim's own warning names the trade-off, "Folding these ops can make the
  simplified model much larger"; a generated model's tensors stay far below it), everything
  else at its default (``mutable_initializer=False``, ``initializers_as_constants=True``,
  ``gemm_fusion_backend="ort_cpu"``).

So localization's pass subsets are sets of enabled rewrites, and a bundle names the
breaking rewrite in onnxsim's words: "with ``fuse_gelu`` also in ``skipped_optimizers``
the model runs", or "with ``skip_constant_folding=True`` ...".
onnxsim always runs its stages to a fixed point; there is no ``fixed_point`` switch.

``simplify`` prints (its C++ core on ``std::cout``); the adapter silences it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from fuzzer.targets.base import DocumentedBehaviour
from fuzzer.targets.growth import Expansion, documented_growth
from fuzzer.targets.onnxsim.enabled import EnabledRewrites
from fuzzer.targets.onnxsim.passes import (
    ALWAYS_DISABLED,
    CONSTANT_FOLDING,
    DONORS,
    OPTED_IN,
    OWN_ANCHORS,
    OWN_STAGES,
    SHAPE_INFERENCE,
    UNREACHABLE,
)
from fuzzer.targets.onnxsim.silence import silenced
from fuzzer.targets.onnxsim.snippet import python_list
from oracles import shows

#: The optimizer pass ``skip_fuse_bn`` names.
FUSE_BN = "fuse_bn_into_conv"
#: ``tensor_size_threshold`` (the CLI's ``--no-large-tensor``): no folded tensor above it.
FOLDED_TENSOR_LIMIT = "1MB"

#: Passes whose source documents what they add in place of what they rewrite.
EXPANSIONS: dict[str, Expansion] = {
    # rewrite_arg_reduce_select_last_index.h: "(dim_size_along_axis - 1) - ArgMax(Flip(x,
    # axis), axis, keepdims)", Flip as Slice(steps=-1), the size read off Shape(x).
    "rewrite_arg_reduce_select_last_index": Expansion(
        "", frozenset({"Shape", "Gather", "Slice", "Sub", "Constant", "Unsqueeze", "Squeeze",
                       "Cast"})),
    # eliminate_nop_softmax.h: "the node is replaced by ... ConstantOfShape(Shape(X))".
    "eliminate_nop_softmax": Expansion("", frozenset({"ConstantOfShape", "Shape"})),
    # eliminate_loop_with_const_trip_count.h: "Unrolls a Loop node into its constituent
    # iterations".
    "eliminate_loop_with_const_trip_count": Expansion("Loop", None),
    # onnxsim.cpp: the batched MatMul+bias -> Gemm rewrite introduces "reshape scaffolding"
    # that eliminate_reshape_around_elementwise cancels between consecutive linears.
    "fuse_matmul_add_bias_into_gemm_batched": Expansion("MatMul", frozenset({"Reshape", "Gemm"})),
    # README: onnxsim "infers the whole computation graph and then replaces the redundant
    # operators with their constant outputs": a folded node of several outputs (a Split)
    # becomes one Constant per output.
    CONSTANT_FOLDING: Expansion("", frozenset({"Constant"})),
}


def _named_passes(config: dict[str, Any]) -> list[str]:
    """The pass list a configuration names (a whole default run names none: then the check
    runs again on localization's minimal list)."""
    return list(config.get("passes") or ())


def _ir_upgrade(finding: Any, config: dict[str, Any]) -> bool:
    return shows(finding, "metadata-change") and \
        finding.message.startswith("IR version 3 became 4")


def _documented_expansion(finding: Any, config: dict[str, Any]) -> bool:
    return documented_growth(finding, _named_passes(config), EXPANSIONS)


def _work_left_for_its_stages(finding: Any, config: dict[str, Any]) -> bool:
    return shows(finding, "bloat") and finding.detail.get("survives_cleanup") is False


def _softmax_of_one_element(finding: Any, config: dict[str, Any]) -> bool:
    return shows(finding, "output-mismatch") and finding.detail.get("kind") == "nan" and \
        "eliminate_nop_softmax" in _named_passes(config)


#: what onnxsim documents about its own behaviour.
DOCUMENTED = (
    DocumentedBehaviour(
        "initializers-immutable",
        "onnxsim --mutable-initializer help: 'onnxsim treats all initializers immutable'; "
        "onnxsim/model_prep.cpp, RemoveInitializerFromInput drops initializers from the graph "
        "inputs and 'if (removed_any && model.ir_version() < 4) model.set_ir_version(4)'",
        _ir_upgrade),
    DocumentedBehaviour(
        "documented-expansion",
        "onnxsim/passes/rewrite_arg_reduce_select_last_index.h (Flip + ArgMax + Sub in place "
        "of select_last_index=1), eliminate_nop_softmax.h (ConstantOfShape(Shape(X))), "
        "eliminate_loop_with_const_trip_count.h ('Unrolls a Loop node into its constituent "
        "iterations'), onnxsim.cpp on fuse_matmul_add_bias_into_gemm_batched's reshape "
        "scaffolding, README on constant folding ('replaces the redundant operators with "
        "their constant outputs': one Constant per output of a folded node)",
        _documented_expansion),
    DocumentedBehaviour(
        "work-left-for-its-own-stages",
        "onnxsim/passes/fuse_mul_into_conv.h and fuse_preceding_mul_into_conv.h: 'creating "
        "Mul nodes on the constant weights, which the constant folder then materialises'; "
        "onnxsim.cpp runs eliminate_deadend and constant folding in every fixed-point round: "
        "growth made only of dead or constant-foldable nodes is gone once those stages run "
        "(the bloat oracle counts it where the configuration runs them)",
        _work_left_for_its_stages),
    DocumentedBehaviour(
        "softmax-of-one-element-is-constant",
        "onnxsim/passes/eliminate_nop_softmax.h: a Softmax over one element becomes the "
        "constant 1 (LogSoftmax 0): '(Strictly, a non-finite input would give NaN in a naive "
        "implementation; the constant is the mathematical value.)'",
        _softmax_of_one_element),
)


class OnnxSimTarget(EnabledRewrites):
    """onnx-simplifier's ``simplify`` (see the module docstring).

    Raises (at construction):
        ImportError: onnxsim is not installed, or it cannot list its passes.
    """

    name = "onnxsim"
    repository = "daquexian/onnx-simplifier"
    package = "onnxsim"
    saves_its_own_form = True  # it names unnamed nodes and drops partial value_info
    enabler = SHAPE_INFERENCE
    donors = DONORS

    def __init__(self) -> None:
        import onnxsim
        from onnxsim import onnxsim_cpp2py_export as core

        self._mod = onnxsim
        try:
            core._list_other_optimizers()  # registers onnxsim's own passes first
            listed = list(core._list_optimizers())
        except AttributeError as exc:
            raise ImportError(f"onnxsim {self.version()} cannot list its optimizer passes "
                              f"(--list-default-optimizers): {exc}") from None
        listed += [p for p in OPTED_IN if p not in listed]
        self._optimizer = [p for p in listed if p not in ALWAYS_DISABLED]
        from fuzzer.targets.onnxoptimizer.anchors import ANCHORS

        self._anchors = {p: ANCHORS[p] for p in self._optimizer if p in ANCHORS}
        self._anchors.update(OWN_ANCHORS)

    def version(self) -> str:
        return getattr(self._mod, "__version__", "unknown")

    def optimizer_passes(self) -> list[str]:
        """The optimizer passes ``simplify`` runs by default, in its order."""
        return list(self._optimizer)

    def available_passes(self) -> list[str]:
        return [*OWN_STAGES, *self._optimizer]

    def simplify_options(self, config: dict[str, Any]) -> dict[str, Any]:
        """The keyword arguments of ``onnxsim.simplify`` that run ``config``."""
        enabled = set(self.passes_of(config))
        skipped = [p for p in self._optimizer if p not in enabled]
        options: dict[str, Any] = {"check_n": 0}
        if len(skipped) == len(self._optimizer):
            options["perform_optimization"] = False
        else:
            if FUSE_BN in skipped:
                skipped.remove(FUSE_BN)
                options["skip_fuse_bn"] = True
            options["skipped_optimizers"] = skipped
        options["skip_constant_folding"] = CONSTANT_FOLDING not in enabled
        options["skip_shape_inference"] = SHAPE_INFERENCE not in enabled
        options["tensor_size_threshold"] = FOLDED_TENSOR_LIMIT
        options["certify"] = False
        return options

    def optimize(self, model: Any, config: dict[str, Any]) -> Any:
        """Run ``onnxsim.simplify`` with :meth:`simplify_options` and return its model.

        Raises:
            Exception: whatever ``simplify`` raises (a ValidationError where its own checker
                rejects the result).
        """
        with silenced():
            simplified, _ = self._mod.simplify(model, **self.simplify_options(config))
        return simplified

    def droppable(self) -> list[str]:
        """Its stages and ``fuse_bn_into_conv`` (``skip_fuse_bn``)."""
        return [*OWN_STAGES, FUSE_BN]

    def shared_cause(self, finding: Any) -> str | None:
        """``ir3-initializers-not-inputs`` for the IR <= 3 rule that every initializer be a
        graph input, which onnxsim's own checker (a RuntimeError) or onnx's (an invalid
        model) raises: an IR 3 model keeps its IR version unless onnxsim removed an
        initializer from the inputs (model_prep.cpp, RemoveInitializerFromInput), and every
        stage that creates an initializer (constant folding, a fusion's new weight) then
        breaks the rule, whichever it is."""
        if shows(finding, "optimizer-error", "invalid-model") and \
                "in initializer but not in graph input" in finding.message:
            return "ir3-initializers-not-inputs"
        return None

    def anchors(self) -> Mapping[str, frozenset[str]]:
        return self._anchors

    def unreachable(self) -> Mapping[str, str]:
        return dict(UNREACHABLE)

    def documented_behaviours(self) -> tuple[DocumentedBehaviour, ...]:
        return DOCUMENTED

    def oracle_context(self, config: dict[str, Any]) -> dict[str, Any]:
        """A simplifier: leftover initializers count where its dead-end and unused-initializer
        passes ran; dead nodes count where ``eliminate_deadend`` ran (it runs inside every
        fixed-point round, after every other pass); constant-only work counts as left
        undone where constant folding ran."""
        enabled = set(self.passes_of(config))
        return {"unused_initializers_are_bloat": "eliminate_unused_initializer" in enabled,
                "interface_may_change": False,
                "cleanup_ran": "eliminate_deadend" in enabled,
                "constants_folded": CONSTANT_FOLDING in enabled}

    def ablation_line(self, config: dict[str, Any], breaking: str, symptom: str) -> str:
        if breaking in OWN_STAGES:
            switch = f"`skip_{breaking}=True`"
        elif breaking == FUSE_BN:
            switch = "`skip_fuse_bn=True`"
        else:
            switch = f"`{breaking}` also in `skipped_optimizers`"
        return (f"With {switch} (every other setting kept) the model shows no {symptom}.")

    def repro_snippet(self, config: dict[str, Any]) -> str:
        options = self.simplify_options(config)
        lines = ["import onnxsim\n"]
        if "skipped_optimizers" in options:
            lines.append(python_list("SKIPPED", options["skipped_optimizers"]))
        lines.append("optimized, _ = onnxsim.simplify(\n    model,\n")
        lines += [f"    {key}={'SKIPPED' if key == 'skipped_optimizers' else repr(value)},\n"
                  for key, value in options.items()]
        lines.append(")\n")
        return "".join(lines)
