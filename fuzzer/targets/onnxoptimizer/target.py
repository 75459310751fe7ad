"""Target adapter for onnxoptimizer (https://github.com/onnx/optimizer)."""

from __future__ import annotations

import random
from collections.abc import Mapping
from typing import Any

from fuzzer.targets.base import SPARSE_ATTRIBUTES_REFUSED, DocumentedBehaviour, Target
from fuzzer.targets.growth import Expansion, documented_growth
from oracles import shows
from oracles.base import STAGES
from oracles.tolerance import ONLY_INPUT_INFINITE

#: Passes that need a special model layout or change the model's interface on purpose;
#: drawn by random subsets only when a user names them with --passes.
SPECIAL_PASSES = frozenset({
    "split_init", "split_predict", "rename_input_output", "set_unique_name_for_nodes",
    "rewrite_input_dtype", "adjust_add", "adjust_slice_and_matmul", "lift_lexical_references",
})
#: Passes that rename, retype or cut the graph interface by design.
INTERFACE_PASSES = frozenset({"rename_input_output", "rewrite_input_dtype", "split_init",
                              "split_predict"})
#: How far a configuration holding one of these passes is judged (``judge_until``):
#: ``split_init`` and ``split_predict`` cut the graph into its init and predict nets (one
#: half's outputs are not the model's: split.h), and ``lift_lexical_references`` "yields a
#: graph that does not conform to the ONNX spec" (lift_lexical_references.h), so it is
#: judged only as far as the optimizer's own run.
JUDGED_UNTIL = {"split_init": "load", "split_predict": "load",
                "lift_lexical_references": "optimize"}
#: Share of drawn configurations (other than the default and "all" lists) that add one of
#: :data:`SPECIAL_PASSES`, where the user named no passes.
SPECIAL_SHARE = 0.15
#: Passes that must end the pass list (pass_manager.h: "split_init and split_predict
#: should be the last in the list").
LAST_PASSES = frozenset({"split_init", "split_predict"})
#: The pass whose job is to remove unused initializers.
CLEANUP_PASS = "eliminate_unused_initializer"
#: Passes that never orphan an initializer: they may run after the clean-up.
NON_ORPHANING = frozenset({CLEANUP_PASS, "eliminate_duplicate_initializer", "rewrite_where",
                           "nop"})


#: The pass that removes dead nodes.
DEADEND_PASS = "eliminate_deadend"
#: Passes that never leave a dead node: they may run after the dead-end pass.
NO_DEAD_NODES = frozenset({DEADEND_PASS, CLEANUP_PASS, "eliminate_duplicate_initializer",
                           "nop"})


def deadend_ran_last(passes: list[str]) -> bool:
    """Whether dead nodes left by a run of ``passes`` count as bloat: the dead-end pass ran
    and only passes in :data:`NO_DEAD_NODES` followed it (a fusion after it leaves what it
    disconnects, as every fusion does, for a later dead-end pass)."""
    if DEADEND_PASS not in passes:
        return False
    last = len(passes) - 1 - passes[::-1].index(DEADEND_PASS)
    return all(p in NO_DEAD_NODES for p in passes[last:])


def with_special_pass(passes: list[str], rng: random.Random) -> list[str]:
    """``passes`` with one of :data:`SPECIAL_PASSES` added: at the end for
    :data:`LAST_PASSES`, else at a random place."""
    special = rng.choice(sorted(SPECIAL_PASSES))
    chosen = [p for p in passes if p not in LAST_PASSES]
    if special in LAST_PASSES:
        return chosen + [special]
    chosen.insert(rng.randint(0, len(chosen)), special)
    return chosen


def cleanup_ran_last(passes: list[str]) -> bool:
    """Whether unused initializers left by a run of ``passes`` count as bloat: the clean-up
    pass ran, followed only by passes in :data:`NON_ORPHANING`. Other passes routinely leave
    the initializers of the nodes they removed for the clean-up pass."""
    if CLEANUP_PASS not in passes:
        return False
    last = len(passes) - 1 - passes[::-1].index(CLEANUP_PASS)
    return all(p in NON_ORPHANING for p in passes[last:])


def _ir_upgrade(finding: Any, config: dict[str, Any]) -> bool:
    return shows(finding, "metadata-change") and \
        finding.message.startswith("IR version 3 became 4")


def _dead_ends_left(finding: Any, config: dict[str, Any]) -> bool:
    return shows(finding, "bloat") and finding.detail.get("survives_cleanup") is False


#: Passes whose header or code documents the ops they add for what they rewrite (pass ->
#: :class:`fuzzer.targets.growth.Expansion`).
EXPANSIONS: dict[str, Expansion] = {
    # replace_einsum_with_matmul.h: "Z = einsum(X,Y)" becomes "Y1 = transpose(Y),
    # Z = matmul(X,Y1)" for a transposed-matmul equation.
    "replace_einsum_with_matmul": Expansion("Einsum", frozenset({"Transpose", "MatMul"})),
    # fuse_add_bias_into_conv.h, "case 2: A is 1-element 1D tensor": the one bias value is
    # reshaped (Squeeze or Unsqueeze) and tiled to the Conv's M channels (Constant + Tile).
    "fuse_add_bias_into_conv": Expansion(
        "Add", frozenset({"Squeeze", "Unsqueeze", "Constant", "Tile"})),
    # fuse_consecutive_slices.h, runTransform: every fusion concatenates the two Slices'
    # starts, ends, axes and steps with four new Concat nodes feeding one new Slice.
    "fuse_consecutive_slices": Expansion("", frozenset({"Concat"})),
}


def _documented_expansion(finding: Any, config: dict[str, Any]) -> bool:
    """Node growth made only of the ops that the configuration's passes document adding in
    place of what they rewrote."""
    return documented_growth(finding, config.get("passes") or (), EXPANSIONS)


def _input_casts(finding: Any, config: dict[str, Any]) -> bool:
    """Node growth made only of Cast nodes in a configuration with ``rewrite_input_dtype``,
    which retypes each int64 graph input to int32 and casts it back for its consumers."""
    added = set(finding.detail.get("ops_added", ()))
    return shows(finding, "bloat") and added == {"Cast"} \
        and "rewrite_input_dtype" in (config.get("passes") or ()) \
        and not finding.detail.get("unused_initializers")


def _log_softmax_finite(finding: Any, config: dict[str, Any]) -> bool:
    """A wrong output of a configuration with ``fuse_consecutive_log_softmax`` that differs
    only where the input model's output is infinite and the optimized one finite."""
    return shows(finding, "output-mismatch") and ONLY_INPUT_INFINITE in finding.message \
        and "fuse_consecutive_log_softmax" in (config.get("passes") or ())


#: what onnxoptimizer documents about its own behaviour.
DOCUMENTED = (
    SPARSE_ATTRIBUTES_REFUSED,
    DocumentedBehaviour(
        "ir-version-upgrade",
        "onnxoptimizer/optimize.h, Optimizer::optimize: \"Upgrade ir_version to 4 so that "
        "initializer can be not in input\" (every IR 3 model leaves as IR 4)",
        _ir_upgrade),
    DocumentedBehaviour(
        "dead-ends-left-for-eliminate_deadend",
        "onnxoptimizer/passes/eliminate_deadend.h: dead nodes are the job of the "
        "eliminate_deadend pass (in the default list); other passes leave what they "
        "disconnect, and the growth is gone after dead-end elimination and constant folding",
        _dead_ends_left),
    DocumentedBehaviour(
        "documented-expansion",
        "onnxoptimizer/passes/replace_einsum_with_matmul.h (Before/After comment): an Einsum "
        "of a transposed-matmul equation becomes Transpose + MatMul, one node more",
        _documented_expansion),
    DocumentedBehaviour(
        "int32-input-casts",
        "onnxoptimizer/passes/rewrite_input_dtype.h, rewrite_input_dtype: each int64 graph "
        "input becomes int32, with a new Cast node back to int64 before its consumers",
        _input_casts),
    DocumentedBehaviour(
        "log-softmax-finite-where-softmax-underflows",
        "ONNX operator spec, LogSoftmax: \"LogSoftmax(input, axis) = Log(Softmax(input, "
        "axis=axis))\"; onnxoptimizer/passes/fuse_consecutive_log_softmax.h puts the one in "
        "place of the other with the same axis, so the model is finite where the input "
        "model's Softmax rounds to 0 and its Log gives -inf (beyond float64's range too)",
        _log_softmax_finite),
)


class OnnxOptimizerTarget(Target):
    """onnxoptimizer: ``onnxoptimizer.optimize(model, passes, fixed_point)``.

    Configuration: ``{"passes": [pass names], "fixed_point": bool}``. The campaign cycles
    through: the default list (``get_fuse_and_elimination_passes()``), each single pass, all
    available passes, and random subsets in random order; each with and without fixed_point.
    """

    name = "onnxoptimizer"
    repository = "onnx/optimizer"
    package = "onnxoptimizer"
    build_module = "fuzzer.builds.onnxoptimizer"
    #: ``onnxoptimizer.optimize`` loads the model into onnx IR, applies the passes in turn
    #: and saves it (optimize.h); nothing else happens between two passes.
    splits_at_saved_models = True

    def __init__(self) -> None:
        import onnxoptimizer

        self._mod = onnxoptimizer
        self._cycle: list[str] = []
        # asked for each case a campaign draws: the binding makes new strings on every call,
        # and cases that share these pickle them once per batch
        self._available = tuple(onnxoptimizer.get_available_passes())
        self._default = tuple(onnxoptimizer.get_fuse_and_elimination_passes())

    def version(self) -> str:
        return getattr(self._mod, "__version__", "unknown")

    def available_passes(self) -> list[str]:
        return list(self._available)

    def default_passes(self) -> list[str]:
        return list(self._default)

    def optimize(self, model: Any, config: dict[str, Any]) -> Any:
        return self._mod.optimize(model, self.passes_of(config),
                                  bool(config.get("fixed_point", False)))

    def configurations(self, rng: random.Random, passes: list[str] | None) -> dict[str, Any]:
        pool = list(passes) if passes else [
            p for p in self.available_passes() if p not in SPECIAL_PASSES]
        default = [p for p in self.default_passes() if p in pool] if passes is None else pool
        if not self._cycle:
            self._cycle = ["default", "single", "single", "single", "all", "subset", "subset"]
            rng.shuffle(self._cycle)
        kind = self._cycle.pop()
        if kind == "default":
            chosen = default
        elif kind == "single":
            chosen = [rng.choice(pool)]
        elif kind == "all":
            chosen = list(pool)
        else:
            chosen = rng.sample(pool, rng.randint(min(2, len(pool)), min(len(pool), 8)))
        if passes is None and kind in ("single", "subset") and rng.random() < SPECIAL_SHARE:
            chosen = with_special_pass(chosen, rng)
        return {"passes": chosen, "fixed_point": rng.random() < 0.5}

    def special_passes(self) -> frozenset[str]:
        """Passes outside the fuse-and-elimination family: they rename, retype or cut the
        graph by design, or serve other frameworks; one joins :data:`SPECIAL_SHARE` of the
        drawn configurations."""
        return SPECIAL_PASSES

    def documented_behaviours(self) -> tuple[DocumentedBehaviour, ...]:
        return DOCUMENTED

    def anchors(self) -> Mapping[str, frozenset[str]]:
        from fuzzer.targets.onnxoptimizer.anchors import ANCHORS

        return ANCHORS

    def oracle_context(self, config: dict[str, Any]) -> dict[str, Any]:
        passes = self.passes_of(config)
        stages = [JUDGED_UNTIL[p] for p in passes if p in JUDGED_UNTIL]
        return {"unused_initializers_are_bloat": cleanup_ran_last(passes),
                "interface_may_change": bool(INTERFACE_PASSES.intersection(passes)),
                "cleanup_ran": deadend_ran_last(passes),
                "judge_until": min(stages, key=STAGES.index) if stages else "compare"}

    def repro_snippet(self, config: dict[str, Any]) -> str:
        return (
            "import onnxoptimizer\n"
            f"PASSES = {self.passes_of(config)!r}\n"
            f"optimized = onnxoptimizer.optimize(model, PASSES, "
            f"fixed_point={bool(config.get('fixed_point', False))})\n"
        )
