"""Target adapter for onnxscript's optimizer (``onnxscript.optimizer.optimize``) on
``onnx_ir`` models, with the rewriter's rule sets as the configuration space.

``optimize`` (``optimize_ir``, onnxscript 0.7.2) is a sequence of ``onnx_ir`` passes:
``InlinePass`` (every model-local function call inlined), then twice, stopping early when
nothing changed, ``FoldConstantsPass`` (constant folding through onnx's reference
evaluator), a ``RewritePass`` of the rewrite rules, ``RemoveUnusedNodesPass``,
``RemoveUnusedFunctionsPass`` and ``RemoveUnusedOpsetsPass``; then once
``RemoveUnusedNodesPass``, ``LiftConstantsToInitializersPass``,
``LiftSubgraphInitializersToMainGraphPass``, ``DeduplicateInitializersPass``,
``CommonSubexpressionEliminationPass``, ``OutputFixPass`` and ``NameFixPass``.

A configuration is ``{"rule_set": "default"|"common", "passes": [names] | None}``: the rule
set of the ``RewritePass`` (:data:`.rules.RULE_SETS`) and the steps left enabled, named as
onnxscript names them: the passes by their class names, each rewrite rule by its own name
(:func:`.rules.rule_name`). None runs every step: for the default rule set that is
``onnxscript.optimizer.optimize(model)`` itself. A list first gives the model what
``FoldConstantsPass`` gives the rules in ``optimize`` without folding anything (shapes and
Constant-node values: :func:`prepare`), then runs the same sequence with only those steps
(the ``RewritePass`` with only the named rules: any rule of ``common`` it names, in that
set's order), so a rule acts without folding and localization names the breaking rule or
pass. Models go
through ``onnx_ir``'s serde as ``optimize`` does with a ModelProto.

The rule set ``ort_fusions`` is instead the one step ``optimize_for_ort``
(``onnxscript.rewriter.ort_fusions``: ``optimize`` around the onnxruntime transformer
fusions), with its documented ``debug`` and ``clear_metadata`` options at times
(:data:`ORT_OPTIONS`).

A configuration may also hold ``"options"``: keyword arguments of ``optimize`` that its
docstring documents, at values other than their defaults (:data:`OPTIONS`:
``onnx_shape_inference``, ``input_size_limit``, ``output_size_limit``, ``num_iterations``,
``stop_if_no_change``); a full step list then calls ``optimize(model, **options)``, a
sublist builds the folding pass and the loop with them.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from fuzzer.targets.base import ANY, SPARSE_ATTRIBUTES_REFUSED, DocumentedBehaviour, Target
from fuzzer.targets.onnxruntime_transformers.target import _quiet
from fuzzer.targets.onnxscript.rules import (
    DONORS,
    ORT_FUSION_DONORS,
    ORT_FUSIONS,
    ORT_STEP,
    RULE_SETS,
    rule_set,
)
from oracles import shows

DEFAULT_RULE_SET = "default"
#: the name of the rewrite-rule slot in :data:`STEPS` (filled by the rule set's names).
RULES = "<rules>"


@dataclass(frozen=True)
class Step:
    """One step of ``optimize_ir``.

    Attributes:
        name: the pass's class name (``RULES`` for the rewrite rules).
        phase: ``before`` (once, first), ``loop`` (inside the repeated ``PassManager``) or
            ``after`` (once, last).
        make: ``() -> onnx_ir pass`` with ``optimize_ir``'s arguments.
    """

    name: str
    phase: str
    make: Callable[[], Any] | None = None


def _common(name: str, **kwargs: Any) -> Callable[[], Any]:
    def make() -> Any:
        import onnx_ir.passes.common as common

        return getattr(common, name)(**kwargs)
    return make


def _fold(options: Mapping[str, Any] | None = None) -> Any:
    """``FoldConstantsPass`` as ``optimize_ir`` builds it, with ``optimize``'s keyword
    ``options`` (:data:`OPTIONS`) where given."""
    from onnxscript.optimizer import _constant_folding as folding

    options = options or {}
    return folding.FoldConstantsPass(
        shape_inference=options.get("onnx_shape_inference", True),
        input_size_limit=options.get("input_size_limit",
                                     folding.DEFAULT_CONSTANT_FOLD_INPUT_SIZE_LIMIT),
        output_size_limit=options.get("output_size_limit",
                                      folding.DEFAULT_CONSTANT_FOLD_OUTPUT_SIZE_LIMIT))


#: ``optimize_ir``'s passes in its order (``RemoveUnusedNodesPass`` runs in the loop and
#: after it; its name enables both).
STEPS: tuple[Step, ...] = (
    Step("InlinePass", "before", _common("InlinePass")),
    Step("FoldConstantsPass", "loop", _fold),
    Step(RULES, "loop"),
    Step("RemoveUnusedNodesPass", "loop", _common("RemoveUnusedNodesPass")),
    Step("RemoveUnusedFunctionsPass", "loop", _common("RemoveUnusedFunctionsPass")),
    Step("RemoveUnusedOpsetsPass", "loop", _common("RemoveUnusedOpsetsPass")),
    Step("RemoveUnusedNodesPass", "after", _common("RemoveUnusedNodesPass")),
    Step("LiftConstantsToInitializersPass", "after",
         _common("LiftConstantsToInitializersPass", lift_all_constants=True, size_limit=0)),
    Step("LiftSubgraphInitializersToMainGraphPass", "after",
         _common("LiftSubgraphInitializersToMainGraphPass")),
    Step("DeduplicateInitializersPass", "after", _common("DeduplicateInitializersPass")),
    Step("CommonSubexpressionEliminationPass", "after",
         _common("CommonSubexpressionEliminationPass")),
    Step("OutputFixPass", "after", _common("OutputFixPass")),
    Step("NameFixPass", "after", _common("NameFixPass")),
)
#: ``optimize_ir``'s loop: at most this many iterations, stopping early without a change.
ITERATIONS = 2
#: keyword arguments of ``onnxscript.optimizer.optimize`` (documented in its docstring) ->
#: the values other than the default a configuration may set: node-level shape inference
#: off, folding limits small enough that the generated constants cross them (inputs above
#: ``input_size_limit`` are folded only by Transpose; outputs above ``output_size_limit``
#: are not stored), one or three loop iterations, no early stop.
OPTIONS: dict[str, tuple[Any, ...]] = {
    "onnx_shape_inference": (False,),
    "input_size_limit": (4, 64),
    "output_size_limit": (4, 64),
    "num_iterations": (1, 3),
    "stop_if_no_change": (False,),
}
#: the same for ``onnxscript.rewriter.ort_fusions.optimize_for_ort`` (its docstring:
#: "If debug is True, enable pattern matching tracer for debugging": each fusion that
#: applied nowhere runs its rules again with a ``MatchingTracer`` and prints its report;
#: "If clear_metadata is True, clear metadata and doc strings from the model").
ORT_OPTIONS: dict[str, tuple[Any, ...]] = {"debug": (True,), "clear_metadata": (True,)}
#: steps that act on any graph (localization's anchors).
ANY_GRAPH = ("FoldConstantsPass", "RemoveUnusedNodesPass", "LiftConstantsToInitializersPass",
             "DeduplicateInitializersPass", "CommonSubexpressionEliminationPass",
             "OutputFixPass", "NameFixPass")


def prepare(model: Any) -> None:
    """What ``FoldConstantsPass`` gives the rules in ``optimize`` before they run, without
    folding anything: onnx shape inference (onnx_ir's ``ShapeInferencePass``) and the values
    of Constant nodes (``onnxscript.optimizer.basic_constant_propagation``), on the
    ``onnx_ir`` model ``model`` in place."""
    import onnx_ir as ir
    import onnx_ir.passes.common as common
    from onnxscript.optimizer import basic_constant_propagation

    common.ShapeInferencePass()(model)
    basic_constant_propagation(ir.traversal.RecursiveGraphIterator(model.graph))


def build_pipeline(enabled: set[str], rules: list[Any],
                   options: Mapping[str, Any] | None = None) -> Any:
    """``optimize_ir``'s pass sequence with only the steps named in ``enabled`` and the
    ``RewritePass`` over ``rules`` (left out when empty), the folding pass and the loop
    built with ``optimize``'s keyword ``options`` (:data:`OPTIONS`); an in-place
    ``onnx_ir.passes.Sequential``, or None when no step is left."""
    import onnx_ir as ir
    from onnxscript import rewriter

    options = options or {}
    phases: dict[str, list[Any]] = {"before": [], "loop": [], "after": []}
    for step in STEPS:
        if step.name == RULES:
            if rules:
                phases["loop"].append(rewriter.RewritePass(rules))
        elif step.name == "FoldConstantsPass" and step.name in enabled:
            phases[step.phase].append(_fold(options))
        elif step.name in enabled:
            phases[step.phase].append(step.make())
    passes = list(phases["before"])
    if phases["loop"]:
        passes.append(ir.passes.PassManager(
            phases["loop"], steps=options.get("num_iterations", ITERATIONS),
            early_stop=options.get("stop_if_no_change", True)))
    passes += phases["after"]
    return ir.passes.Sequential(*passes) if passes else None


def _optimize_for_ort(model: Any, run: bool, **options: Any) -> Any:
    """``onnxscript.rewriter.ort_fusions.optimize_for_ort`` with keyword ``options``
    (:data:`ORT_OPTIONS`) on the ``onnx_ir`` form of ``model`` (a ModelProto), or only the
    round trip through ``onnx_ir``'s serde where ``run`` is False; the resulting
    ModelProto."""
    import onnx_ir as ir
    from onnxscript.rewriter.ort_fusions import optimize_for_ort

    model_ir = ir.serde.deserialize_model(model)
    if run:
        optimize_for_ort(model_ir, **options)
    return ir.serde.serialize_model(model_ir)


def unwrap(exc: BaseException) -> BaseException:
    """The exception an onnx_ir ``PassError`` wraps (``__cause__``, through nested pass
    managers), or ``exc`` itself where it wraps none."""
    import onnx_ir as ir

    inner = exc
    while isinstance(inner, ir.passes.PassError) and inner.__cause__ is not None:
        inner = inner.__cause__
    return inner


def _inlined(finding: Any, config: dict[str, Any]) -> bool:
    """Node growth where a call of a model-local function (an op type onnx defines no
    schema for) left the graph, with ``InlinePass`` in the configuration."""
    import onnx.defs

    if not shows(finding, "bloat") or not finding.detail.get("ops_removed"):
        return False
    steps = config.get("passes")
    calls = [op for op in finding.detail["ops_removed"] if not onnx.defs.has(op)]
    return bool(calls) and (steps is None or "InlinePass" in steps)


def _left_for_cleanup(finding: Any, config: dict[str, Any]) -> bool:
    """Node growth made only of dead or constant-foldable nodes (gone after dead-node
    removal and folding), of a configuration that leaves out ``RemoveUnusedNodesPass``."""
    steps = config.get("passes")
    return shows(finding, "bloat") and finding.detail.get("survives_cleanup") is False \
        and steps is not None and "RemoveUnusedNodesPass" not in steps


#: what onnxscript documents about its optimizer.
DOCUMENTED = (
    SPARSE_ATTRIBUTES_REFUSED,
    DocumentedBehaviour(
        "dead-nodes-left-for-RemoveUnusedNodesPass",
        "onnxscript/rewriter/_rewrite_rule.py, RewriteRuleSet: rules that do not remove "
        "the nodes they match leave them ('We call remove_unused_nodes at end of rewriting'); "
        "onnxscript/optimizer/_optimizer.py runs RemoveUnusedNodesPass after the rules and "
        "folding after them in its loop: without that pass, what they disconnect stays",
        _left_for_cleanup),
    DocumentedBehaviour(
        "functions-inlined",
        "onnxscript/optimizer/__init__.py, optimize: 'inline: If True, inlines all functions "
        "in the model' (the default); onnx_ir/passes/common/inliner.py, InlinePass: each call "
        "of a model-local function becomes the nodes of its body",
        _inlined),
)


class OnnxScriptTarget(Target):
    """onnxscript's optimizer and rewriter (see the module docstring).

    A campaign draws the rule set (``default`` three times as often) and, for a third of
    the cases, a random subset of the steps; otherwise every step.

    Raises (at construction):
        ImportError: onnxscript or onnx_ir is not installed.
    """

    name = "onnxscript"
    repository = "microsoft/onnxscript"
    package = "onnxscript"
    code_coverage = "python"
    #: the optimizer, the rewriter's matcher and rules (the ``common`` rules hold the
    #: default ones) and the onnx_ir passes of ``optimize_ir``'s sequence
    coverage_modules = ("onnxscript.optimizer", "onnxscript.rewriter.__init__",
                        "onnxscript.rewriter._*", "onnxscript.rewriter.pattern",
                        "onnxscript.rewriter.rules.common", "onnx_ir.passes.common")

    def __init__(self) -> None:
        import onnx_ir
        import onnxscript
        import onnxscript.optimizer

        self._version = f"{onnxscript.__version__} (onnx-ir {onnx_ir.__version__})"
        self._optimize = onnxscript.optimizer.optimize

    def version(self) -> str:
        return self._version

    def steps_of(self, rule_set_name: str) -> list[str]:
        """Every step name of rule set ``rule_set_name`` in ``optimize_ir``'s order (rules in
        the rule set's order), each once; for ``ort_fusions`` its one step."""
        if rule_set_name == ORT_FUSIONS:
            return [ORT_STEP]
        names: list[str] = []
        for step in STEPS:
            if step.name == RULES:
                names += [rule.name for rule in rule_set(rule_set_name)]
            else:
                names.append(step.name)
        return list(dict.fromkeys(names))

    def available_passes(self) -> list[str]:
        return [*self.steps_of("common"), ORT_STEP]

    def default_passes(self) -> list[str]:
        return self.steps_of(DEFAULT_RULE_SET)

    def default_config(self) -> dict[str, Any]:
        return {"rule_set": DEFAULT_RULE_SET, "passes": None}

    def configuration_space(self) -> str:
        return (f"rule set ({' or '.join(RULE_SETS)}; {DEFAULT_RULE_SET} unless named), the "
                f"steps left enabled: {len(self.steps_of('common'))} pass and rule names, and "
                f"optimize()'s options ({', '.join(OPTIONS)}; defaults unless named)")

    def unnamed_passes(self, config: dict[str, Any]) -> list[str]:
        return self.steps_of(config.get("rule_set", DEFAULT_RULE_SET))

    def relaxations(self, config: dict[str, Any]) -> dict[str, dict[str, Any]]:
        """``options`` (optimize()'s non-default keyword arguments) where set: localization
        may drop them to see whether a finding needs them."""
        if config.get("options"):
            return {"options": {k: v for k, v in config.items() if k != "options"}}
        return {}

    def accepts_pass(self, name: str) -> bool:
        return name in self.available_passes()

    def runs_optimize(self, config: dict[str, Any]) -> bool:
        """Whether ``config`` is exactly ``onnxscript.optimizer.optimize(model)`` (with its
        ``options`` as keyword arguments, where set)."""
        return config.get("rule_set", DEFAULT_RULE_SET) == DEFAULT_RULE_SET and \
            self.passes_of(config) == self.default_passes()

    def optimize(self, model: Any, config: dict[str, Any]) -> Any:
        """``onnxscript.optimizer.optimize(model, **options)`` where :meth:`runs_optimize`,
        ``optimize_for_ort`` for the ``ort_fusions`` rule set, else :func:`prepare`, then
        :func:`build_pipeline` of the enabled steps with the options, on the model's
        ``onnx_ir`` form; on a copy of ``model``.

        Raises:
            Exception: whatever the passes raise; onnx_ir's ``PassError`` (which names only
                the pass manager) is replaced by the exception it wraps (:func:`unwrap`).
        """
        import onnx
        import onnx_ir as ir

        model = onnx.ModelProto.FromString(model.SerializeToString())  # optimize renames
        try:  # tensors of the ModelProto it is given (Constant values) in place
            with _quiet():
                options = dict(config.get("options") or {})
                if config.get("rule_set") == ORT_FUSIONS:
                    return _optimize_for_ort(model, ORT_STEP in self.passes_of(config),
                                             **options)
                if self.runs_optimize(config):
                    return self._optimize(model, **options)
                enabled = set(self.passes_of(config))
                rules = [rule for named in rule_set("common") if named.name in enabled
                         for rule in named.rules]
                model_ir = ir.serde.deserialize_model(model)
                prepare(model_ir)
                pipeline = build_pipeline(enabled, rules, options)
                if pipeline is not None:
                    pipeline(model_ir)
                return ir.serde.serialize_model(model_ir)
        except ir.passes.PassError as exc:
            raise unwrap(exc) from None

    def configurations(self, rng: random.Random, passes: list[str] | None) -> dict[str, Any]:
        """The rule set (``default`` and ``common`` two in five each, ``ort_fusions`` one in
        five: ``common`` holds every default rule, and the opt-in rules and the fusions
        are reached only where their rule set runs); the named ``passes`` of it, else for a
        third of the cases a random subset of its steps, else every step; for a quarter of
        the cases one or two of optimize()'s options (:data:`OPTIONS`) at a value other
        than the default. ``ort_fusions`` runs its one step, for half of its cases with
        its own options (:data:`ORT_OPTIONS`)."""
        chosen = rng.choices(list(RULE_SETS), [2, 2, 1])[0]
        names = self.steps_of(chosen)
        if chosen == ORT_FUSIONS:
            config = {"rule_set": chosen, "passes": None}
            if rng.random() < 1 / 2:
                keys = rng.sample(sorted(ORT_OPTIONS), rng.randint(1, len(ORT_OPTIONS)))
                config["options"] = {k: rng.choice(ORT_OPTIONS[k]) for k in sorted(keys)}
            return config
        if passes:
            config = {"rule_set": chosen, "passes": [n for n in names if n in passes]}
        elif rng.random() < 1 / 3:
            keep = set(rng.sample(names, rng.randint(1, max(1, len(names) // 2))))
            config = {"rule_set": chosen, "passes": [n for n in names if n in keep]}
        else:
            config = {"rule_set": chosen, "passes": None}
        if rng.random() < 1 / 4:
            keys = rng.sample(sorted(OPTIONS), rng.randint(1, 2))
            config["options"] = {k: rng.choice(OPTIONS[k]) for k in sorted(keys)}
        return config

    def motif_hints(self, config: dict[str, Any]) -> list[str]:
        """The enabled rule and pass names (the ``onnxscript`` and ``functions`` motif
        families name them), then the other targets' passes whose motifs build what they
        rewrite (:data:`.rules.DONORS`); no name twice. A configuration that runs every
        step takes the donors only of the names no motif names itself: there the donors
        of all names would make most of the draws, while the ``onnxscript`` families
        build each of those rules' patterns and near misses. ``ort_fusions`` takes the hints
        of a full default run and the onnxruntime passes whose motifs build transformer
        blocks (:data:`.rules.ORT_FUSION_DONORS`)."""
        from generators.motifs import motifs_for_pass

        if config.get("rule_set") == ORT_FUSIONS:
            around = self.motif_hints({"rule_set": DEFAULT_RULE_SET, "passes": None})
            return list(dict.fromkeys([ORT_STEP, *around, *ORT_FUSION_DONORS]))
        enabled = self.passes_of(config)
        donated = enabled if config.get("passes") is not None else \
            [name for name in enabled if not motifs_for_pass(name)]
        hints = [*enabled, *(d for name in donated for d in DONORS.get(name, ()))]
        return list(dict.fromkeys(hints))

    def anchors(self) -> Mapping[str, frozenset[str]]:
        table: dict[str, frozenset[str]] = {name: ANY for name in ANY_GRAPH}
        for named in rule_set("common"):
            if named.anchors:
                table[named.name] = named.anchors
        return table

    def unreachable(self) -> Mapping[str, str]:
        """Rules whose anchor op types no generated graph holds on this machine."""
        from fuzzer.targets.onnxscript.reach import UNREACHABLE

        return dict(UNREACHABLE)

    def documented_behaviours(self) -> tuple[DocumentedBehaviour, ...]:
        return DOCUMENTED

    def shared_cause(self, finding: Any) -> str | None:
        """``ir3-initializers-not-inputs`` for the checker's IR <= 3 rule that every
        initializer be a graph input: onnx_ir writes the initializers its passes create
        (folded constants, lifted Constant nodes) without listing them as graph inputs
        whatever the IR version, so every pass that creates one shows the same invalid
        model; ``input-default-dropped`` where the optimized model needs a graph input the
        original did not: the initializer that gave an overridable input its default is
        gone while the input stays (seen after constant folding consumed it), whatever
        the pass that last touched the graph."""
        if shows(finding, "invalid-model") and \
                "in initializer but not in graph input" in finding.message:
            return "ir3-initializers-not-inputs"
        if shows(finding, "runtime-failure") and \
                "that the original did not have" in finding.message:
            return "input-default-dropped"
        return None

    def oracle_context(self, config: dict[str, Any]) -> dict[str, Any]:
        """``RemoveUnusedNodesPass`` removes unused nodes and initializers (onnx_ir's
        docstring: "dead code elimination", the graph interface kept), and what runs after
        it (lifting constants, deduplication, CSE, output and name fixes) leaves none;
        ``optimize_for_ort`` ends with ``optimize``, which runs it."""
        cleanup = "RemoveUnusedNodesPass" in self.passes_of(config) or \
            (config.get("rule_set") == ORT_FUSIONS and ORT_STEP in self.passes_of(config))
        return {"unused_initializers_are_bloat": cleanup, "interface_may_change": False,
                "cleanup_ran": cleanup}

    def config_phrase(self, config: dict[str, Any]) -> str:
        if config.get("rule_set") == ORT_FUSIONS:
            options = sorted((config.get("options") or {}).items())
            extra = " and " + ", ".join(f"{k}={v!r}" for k, v in options) if options else ""
            return f"with {ORT_STEP} (onnxscript.rewriter.ort_fusions){extra}"
        phrase = f"with the {config.get('rule_set', DEFAULT_RULE_SET)} rule set"
        options = config.get("options")
        if options:
            phrase += " and " + ", ".join(f"{k}={v!r}" for k, v in sorted(options.items()))
        return phrase

    def ablation_line(self, config: dict[str, Any], breaking: str, symptom: str) -> str:
        return (f"Without `{breaking}` (the rest of optimize's steps and rules kept, same "
                f"rule set) the model shows no {symptom}.")

    def repro_snippet(self, config: dict[str, Any]) -> str:
        if config.get("rule_set") == ORT_FUSIONS:
            return REPRO_ORT.format(run=ORT_STEP in self.passes_of(config),
                                    options=dict(config.get("options") or {}))
        options = dict(sorted((config.get("options") or {}).items()))
        if self.runs_optimize(config):
            args = "".join(f", {k}={v!r}" for k, v in options.items())
            return ("import onnxscript.optimizer\n"
                    f"optimized = onnxscript.optimizer.optimize(model{args})\n")
        return REPRO_PIPELINE.format(enabled=self.passes_of(config), options=options)


#: repro.py's copy of :meth:`OnnxScriptTarget.optimize` for a configuration that names its
#: steps: shapes and Constant values, then optimize_ir's sequence with only those steps.
REPRO_PIPELINE = '''\
import onnx_ir as ir
import onnx_ir.passes.common as common
from onnxscript import rewriter
from onnxscript.optimizer import _constant_folding as folding
from onnxscript.rewriter.rules import common as exported
ENABLED = {enabled!r}  # steps left enabled (rules by name)
OPTIONS = {options!r}  # optimize()'s keyword arguments at non-default values
def rule_name(rule):  # its own name, else the name rules.common exports it under
    if rule.name:
        return rule.name
    for variable in exported.__all__:
        value = getattr(exported, variable)
        value = value() if callable(value) and not hasattr(value, "rules") else value
        group = getattr(value, "rules", value if isinstance(value, (list, tuple)) else [value])
        if any(r._replacement_pattern is rule._replacement_pattern for r in group):
            return variable
rules = list(rewriter._DEFAULT_REWRITE_RULES)  # then the rest of rules.common
named = {{rule_name(r) for r in rules}}
for variable in exported.__all__:
    value = getattr(exported, variable)
    value = value() if callable(value) and not hasattr(value, "rules") else value
    group = getattr(value, "rules", value if isinstance(value, (list, tuple)) else [value])
    rules += [r for r in group if rule_name(r) not in named]
rules = [r for r in rules if rule_name(r) in ENABLED]
def on(name, make):
    return [make()] if name in ENABLED else []
loop = on("FoldConstantsPass", lambda: folding.FoldConstantsPass(
    shape_inference=OPTIONS.get("onnx_shape_inference", True),
    input_size_limit=OPTIONS.get("input_size_limit",
                                 folding.DEFAULT_CONSTANT_FOLD_INPUT_SIZE_LIMIT),
    output_size_limit=OPTIONS.get("output_size_limit",
                                  folding.DEFAULT_CONSTANT_FOLD_OUTPUT_SIZE_LIMIT)))
loop += [rewriter.RewritePass(rules)] if rules else []
for name in ("RemoveUnusedNodesPass", "RemoveUnusedFunctionsPass", "RemoveUnusedOpsetsPass"):
    loop += on(name, getattr(common, name))
passes = on("InlinePass", common.InlinePass)
passes += [ir.passes.PassManager(loop, steps=OPTIONS.get("num_iterations", 2),
                                 early_stop=OPTIONS.get("stop_if_no_change", True))] \
    if loop else []
passes += on("RemoveUnusedNodesPass", common.RemoveUnusedNodesPass)
passes += on("LiftConstantsToInitializersPass", lambda: common.LiftConstantsToInitializersPass(
    lift_all_constants=True, size_limit=0))
for name in ("LiftSubgraphInitializersToMainGraphPass", "DeduplicateInitializersPass",
             "CommonSubexpressionEliminationPass", "OutputFixPass", "NameFixPass"):
    passes += on(name, getattr(common, name))
model_ir = ir.serde.deserialize_model(model)
common.ShapeInferencePass()(model_ir)  # what folding gives the rules, without folding
folding.basic_constant_propagation(ir.traversal.RecursiveGraphIterator(model_ir.graph))
if passes:
    ir.passes.Sequential(*passes)(model_ir)
optimized = ir.serde.serialize_model(model_ir)
'''

#: repro.py's copy of the ``ort_fusions`` configuration.
REPRO_ORT = '''\
import onnx_ir as ir
from onnxscript.rewriter.ort_fusions import optimize_for_ort
model_ir = ir.serde.deserialize_model(model)
if {run!r}:
    optimize_for_ort(model_ir, **{options!r})
optimized = ir.serde.serialize_model(model_ir)
'''
