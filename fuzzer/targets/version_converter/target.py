"""Target adapter for onnx's version converter:
``onnx.version_converter.convert_version(model, target_opset)``.

A configuration is ``{"from": opset | None, "to": opset | None, "passes": [adapters] |
None}``: the conversion from opset ``from`` (the opset generated models declare; None: the
model's own) to ``to`` (None: one step, up unless every named adapter goes down), over
adjacent opset pairs (steps), and the adapters left enabled, named
``"<op type> <opset>-><opset>"`` (:mod:`.adapters`). None (every campaign case) is
``convert_version(model, to)`` itself. A list converts one step at a time and stops before
the first step at which an adapter it does not name would act (an op type of the model
whose schema changes there): every model a list yields is the converter's own output at
some opset on the way, never a half-converted one. So localization names the adapters
the finding needs (``Resize 10->11``), by step and by op type; reduction leaves the one
whose node shows it; the empty list shows only what the converter does at steps where no
op of the model changes (its load, shape inference and save).

The campaign draws every adjacent pair both runtimes run: from opsets 7 (the lowest
onnxruntime supports) to 21 (the highest the generator declares), one step up or down, and
now and then two to four steps. Models at the ``from`` opset come from the generator's hints
(the ``opset`` of :class:`generators.hints.GenerationHints`); the ``version_converter``
motifs build the ops whose form changed between opsets (Upsample, Resize, Split,
Squeeze/Unsqueeze, Reduce*, Pad, Clip, BatchNormalization, Dropout, Softmax, TopK, Slice ...)
at the opsets where their adapters run.

Documented behaviour (:data:`DOCUMENTED`): the changed opset (the converter's purpose),
node growth, conversions onnx registers no adapter for, ops with no earlier version, and
the refusals onnx's adapters spell out.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Mapping
from typing import Any

from fuzzer.targets.base import SPARSE_ATTRIBUTES_REFUSED, DocumentedBehaviour, Target
from fuzzer.targets.version_converter.adapters import (
    NO_PREVIOUS,
    NON_REWRITING,
    Adapter,
    all_adapters,
    step_adapters,
    steps,
)
from generators.hints import GenerationHints
from generators.versions import MAX_OPSET
from oracles import shows

#: the lowest opset onnxruntime runs (docs, "ONNX Runtime supports ONNX opset 7 and up";
#: a lower model loads with a warning and without kernels for most ops).
MIN_RUNNABLE = 7
#: the widest conversion a campaign draws, in steps.
MAX_STEPS = 4
#: random ops around the motifs of a configuration that names its adapters.
FOCUSED_STEPS = (0, 2)


def model_opset(model: Any) -> int:
    """The default-domain opset ``model`` imports.

    Raises:
        ValueError: it imports none.
    """
    for entry in model.opset_import:
        if entry.domain in ("", "ai.onnx"):
            return int(entry.version)
    raise ValueError("the model imports no default-domain opset")


def _opset_changed(finding: Any, config: dict[str, Any]) -> bool:
    """The default opset moved toward the configuration's target, no further."""
    m = re.fullmatch(r"default opset (\d+) became (\d+)", finding.message)
    if not shows(finding, "metadata-change") or m is None:
        return False
    start, now = int(m.group(1)), int(m.group(2))
    to = config.get("to") or now
    return min(start, to) <= now <= max(start, to)


def _growth(finding: Any, config: dict[str, Any]) -> bool:
    return shows(finding, "bloat")


def _refusal(*patterns: str) -> Any:
    wanted = re.compile("|".join(patterns))

    def applies(finding: Any, config: dict[str, Any]) -> bool:
        return shows(finding, "optimizer-error") and bool(wanted.search(finding.message))
    return applies


#: what onnx documents about its version converter (its sources are its documentation:
#: docs/OpsetVersionConverter.md sends readers to convert.h for the adapters there are).
DOCUMENTED = (
    SPARSE_ATTRIBUTES_REFUSED,
    DocumentedBehaviour(
        "opset-converted",
        "onnx/version_converter.py, convert_version: 'Convert opset version of the "
        "ModelProto' to target_version; the model's default-domain opset import becomes "
        "the target opset",
        _opset_changed),
    DocumentedBehaviour(
        "converts-not-optimizes",
        "docs/OpsetVersionConverter.md: the converter exists 'to improve backwards "
        "compatibility of ONNX models'; adapters add nodes where a form changed (Clip's "
        "bounds become Constant inputs, Upsample becomes Resize with roi and scales)",
        _growth),
    DocumentedBehaviour(
        "no-adapter",
        "docs/OpsetVersionConverter.md: 'For a list of available passes, see convert.h'; "
        "onnx/version_converter/BaseConverter.h, adapter_lookup: an op whose schema changed "
        "between the two opsets and for which convert.h registers no adapter fails with "
        "'No Adapter For', 'No Adapter From Version' or 'No Adapter To Version' (convert.h "
        "also lists such gaps as 'Missing in this group')",
        _refusal(r"No Adapter (For|From Version|To Version)")),
    DocumentedBehaviour(
        "no-previous-version",
        "onnx/version_converter/adapters/no_previous_version.h: converting an op below the "
        "first opset that defines it fails with 'No Previous Version of <op> exists'",
        _refusal(r"No Previous Version of \w+ exists")),
    DocumentedBehaviour(
        "unsupported-by-adapter",
        "onnx/version_converter/adapters/*.h: adapters refuse what the other opset cannot "
        "express, in their own words: type_restriction.h and extend_supported_types.h "
        "('DataType ... is not supported'), resize_18_17.h ('Resize axes is not supported "
        "when converting from opset 18 to opset 17', antialias, "
        "keep_aspect_ratio_policy, half_pixel_symmetric), scatter_18_17.h ('max' and "
        "'min' reductions), q_dq_21_20.h (blocked quantization, output_dtype), "
        "scan_9_8.h ('Unsupported ... for Version 8'), axes_input_to_attribute.h ('No "
        "initializer or constant input to node found'), gemm_6_7.h and gemm_7_6.h "
        "(inputs that do not broadcast), upsample_6_7.h (4-D input only); helper.cc, "
        "used by the broadcast adapters: 'can only broadcast between 2 inputs', 'Shape of "
        "input ... is not available' and 'Dimension is a param instead of an int' (symbolic "
        "dims); transformers.h, the attribute-removing adapters: 'Attribute ... must have "
        "value ...' (an attribute the other opset lacks, set to other than its default); "
        "maxpool_8_7.h: 'Opset version 7 of MaxPool cannot include Indices output'",
        _refusal(r"is not supported", r"not supported when", r"Unsupported",
                 r"No initializer or constant input to node found",
                 r"does not have broadcastable inputs", r"must be 'stretch'",
                 r"supports only 4D input", r"can only broadcast between \d+ inputs",
                 r"Dimension is a param instead of an int", r"Shape of input \d+ is not "
                 r"available", r"Attribute \w+ must (not )?have value",
                 r"cannot include Indices output")),
)


#: cause -> whether a finding is of it: findings every adapter that touches the model shows.
SHARED_CAUSES: dict[str, Callable[[Any], bool]] = {
    # the model keeps IR 3, where every initializer must be a graph input, and adapters
    # add initializers (Constant inputs) without listing them
    "ir3-initializers-not-inputs": lambda finding: shows(finding, "invalid-model")
    and "in initializer but not in graph input" in finding.message,
    # a model-local function keeps the opset its body imports while the model's moves:
    # onnxruntime no longer resolves the call
    "functions-not-converted": lambda finding: shows(finding, "load-failure")
    and "is not a registered function/op" in finding.message,
}


class VersionConverterTarget(Target):
    """onnx's version converter (see the module docstring).

    Raises (at construction): nothing beyond importing onnx.
    """

    name = "version-converter"
    repository = "onnx/onnx"
    package = "onnx"

    def __init__(self) -> None:
        import onnx

        self._onnx = onnx

    def version(self) -> str:
        return self._onnx.__version__

    def adapter(self, name: str) -> Adapter | None:
        """The adapter called ``name`` (None: no such adapter)."""
        return all_adapters().get(name)

    def available_passes(self) -> list[str]:
        return list(all_adapters())

    def default_passes(self) -> list[str]:
        return self.available_passes()

    def default_config(self) -> dict[str, Any]:
        return {"from": None, "to": None, "passes": None}

    def configuration_space(self) -> str:
        return (f"conversions between adjacent opsets {MIN_RUNNABLE}..{MAX_OPSET + 1} (up "
                f"and down, up to {MAX_STEPS} steps; from/to, None: one step from the "
                f"model's opset) and the adapters left enabled: {len(all_adapters())} "
                "'<op> <from>-><to>' names")

    def accepts_pass(self, name: str) -> bool:
        return name in all_adapters()

    def relaxations(self, config: dict[str, Any]) -> dict[str, dict[str, Any]]:
        return {}

    def span(self, config: dict[str, Any], start: int | None) -> tuple[int | None, int | None]:
        """``(from, to)`` of ``config`` for a model at opset ``start`` (None: unknown):
        ``from`` is the configuration's or the model's; ``to`` the configuration's, else
        one step from ``from``, down when every named adapter goes down."""
        first = config.get("from") or start
        if first is None:
            named = [self.adapter(p) for p in config.get("passes") or ()]
            first = next((a.start for a in named if a is not None), None)
        to = config.get("to")
        if to is None and first is not None:
            named = [self.adapter(p) for p in config.get("passes") or ()]
            down = bool(named) and all(a is not None and not a.up for a in named)
            to = first - 1 if down else first + 1
        return first, to

    def unnamed_passes(self, config: dict[str, Any]) -> list[str]:
        """The adapters the configuration's steps look up (every adapter where its
        ``from`` is left to the model)."""
        first, to = self.span(config, None)
        if first is None or to is None or config.get("from") is None:
            return self.available_passes()
        return [a.name for start, end in steps(first, to) for a in step_adapters(start, end)]

    def optimize(self, model: Any, config: dict[str, Any]) -> Any:
        """``convert_version(model, to)`` where ``config`` names no adapters; else one step
        at a time, stopping before a step at which an adapter it does not name would act
        on an op type of the model (subgraphs included).

        Raises:
            Exception: whatever the converter raises (``ConvertError``, ``RuntimeError``).
            ValueError: the model imports no default-domain opset.
        """
        from onnx import version_converter

        _, to = self.span(config, model_opset(model))
        if config.get("passes") is None:
            return version_converter.convert_version(model, to)
        enabled = set(config["passes"])
        for start, end in steps(model_opset(model), to):
            present = op_types(model.graph)
            if any(a.op in present and a.name not in enabled
                   for a in step_adapters(start, end)):
                break
            model = version_converter.convert_version(model, end)
        return model

    def configurations(self, rng: random.Random, passes: list[str] | None) -> dict[str, Any]:
        """A conversion of generated models, every adapter enabled: with ``passes`` (the
        user's pool), the step of one of the named adapters; else from an opset in
        ``MIN_RUNNABLE..MAX_OPSET`` one step up (45%), one step down (35%) or two to
        :data:`MAX_STEPS` steps either way."""
        named = [a for a in map(self.adapter, passes or ()) if a is not None
                 and MIN_RUNNABLE <= min(a.start, a.end) and a.start <= MAX_OPSET]
        if named:
            chosen = rng.choice(named)
            return {"from": chosen.start, "to": chosen.end, "passes": None}
        first = rng.randint(MIN_RUNNABLE, MAX_OPSET)
        r = rng.random()
        if r < 0.45 or first == MIN_RUNNABLE:
            width = 1 if r < 0.45 else rng.randint(2, MAX_STEPS)
            return {"from": first, "to": min(first + width, MAX_OPSET + 1), "passes": None}
        width = 1 if r < 0.8 else rng.randint(2, MAX_STEPS)
        return {"from": first, "to": max(first - width, MIN_RUNNABLE), "passes": None}

    def motif_hints(self, config: dict[str, Any]) -> list[str]:
        """The adapters the conversion looks up (the ``version_converter`` motifs name
        them); a configuration that names its adapters asks for them only."""
        named = list(config.get("passes") or ())
        if named:
            return named
        first, to = self.span(config, None)
        on_path = [a.name for s, e in steps(first, to) for a in step_adapters(s, e)] \
            if first is not None and to is not None else []
        return list(dict.fromkeys(on_path))

    def generation_hints(self, config: dict[str, Any]) -> GenerationHints:
        """The :meth:`motif_hints` in models that declare the ``from`` opset; a
        configuration that names its adapters asks for graphs of at most
        :data:`FOCUSED_STEPS` random ops besides the motifs (an adapter it does not name
        that would act stops the conversion)."""
        first, _to = self.span(config, None)
        return GenerationHints(
            passes=tuple(self.motif_hints(config)),
            opset=first if first is not None and MIN_RUNNABLE <= first <= MAX_OPSET else None,
            steps=FOCUSED_STEPS if config.get("passes") else None)

    def anchors(self) -> Mapping[str, frozenset[str]]:
        return {name: frozenset({a.op}) for name, a in all_adapters().items()}

    def unreachable(self) -> Mapping[str, str]:
        """Adapters no generated conversion can make change: outside the opsets both
        runtimes run, or of a kind that never rewrites a node, or that onnx does not
        register (the conversion fails, documented), or below an op's first version."""
        out: dict[str, str] = {}
        for name, a in all_adapters().items():
            kind = a.kind.split(":")[0]
            if min(a.start, a.end) < MIN_RUNNABLE or a.start > MAX_OPSET:
                out[name] = (f"outside the opsets generated models declare and onnxruntime "
                             f"runs ({MIN_RUNNABLE}..{MAX_OPSET} from, up to "
                             f"{MAX_OPSET + 1})")
            elif kind in NON_REWRITING:
                out[name] = NON_REWRITING[kind]
            elif kind == NO_PREVIOUS:
                out[name] = f"{a.op} does not exist at opset {a.end}: the conversion fails " \
                            "(documented: no-previous-version)"
            elif not kind:
                out[name] = "onnx registers no adapter for it (convert.h): the conversion " \
                            "fails (documented: no-adapter)"
        return out

    def documented_behaviours(self) -> tuple[DocumentedBehaviour, ...]:
        return DOCUMENTED

    def shared_cause(self, finding: Any) -> str | None:
        """A cause outside any one adapter (:data:`SHARED_CAUSES`): the IR version the
        converter keeps whatever the target opset, and model-local functions, which it
        does not convert (``convert.cc`` walks the main graph and its subgraphs only)."""
        return next((name for name, applies in SHARED_CAUSES.items() if applies(finding)),
                    None)

    def oracle_context(self, config: dict[str, Any]) -> dict[str, Any]:
        """Not a size optimizer (no node or initializer growth is a finding); the graph
        interface must stay (only the opset changes, :data:`DOCUMENTED`)."""
        return {"unused_initializers_are_bloat": False, "interface_may_change": False,
                "cleanup_ran": False}

    def describe(self, name: str) -> str:
        """What adapter ``name`` is and where onnx registers it ("" if unknown)."""
        a = self.adapter(name)
        if a is None:
            return ""
        where = f"onnx/version_converter/convert.h:{a.line}" if a.line else \
            "no registration in onnx/version_converter/convert.h"
        return f"{a.kind or 'no adapter'} ({where})"

    def config_phrase(self, config: dict[str, Any]) -> str:
        first, to = config.get("from"), config.get("to")
        if first is not None and to is not None:
            return f"converting from opset {first} to {to}"
        return "converting one step from the model's opset"

    def ablation_line(self, config: dict[str, Any], breaking: str, symptom: str) -> str:
        return (f"Converting one step at a time and stopping before the step at which "
                f"`{breaking}` acts, the model shows no {symptom}.")

    def repro_snippet(self, config: dict[str, Any]) -> str:
        first, to = self.span(config, None)
        if config.get("passes") is None:
            target = repr(to) if config.get("to") is not None else (
                "[o.version for o in model.opset_import if o.domain in ('', 'ai.onnx')][0] "
                f"{'-' if self.span(config, 0)[1] < 0 else '+'} 1")
            return ("from onnx import version_converter\n"
                    f"optimized = version_converter.convert_version(model, {target})\n")
        pairs = steps(first, to) if first is not None and to is not None else []
        return REPRO_STEPS.format(enabled=list(config["passes"]), steps=pairs)


def op_types(graph: Any) -> set[str]:
    """Default-domain op types of ``graph`` and of every subgraph of its nodes."""
    found: set[str] = set()
    for node in graph.node:
        if node.domain in ("", "ai.onnx"):
            found.add(node.op_type)
        for attr in node.attribute:
            for sub in ([attr.g] if attr.HasField("g") else []) + list(attr.graphs):
                found |= op_types(sub)
    return found


#: repro.py's copy of a conversion with named adapters: one step at a time, stopping before
#: the step at which an adapter it does not name would act on an op type of the model.
REPRO_STEPS = '''\
from onnx import defs, version_converter
ENABLED = {enabled!r}  # the conversion stops before a step where another adapter would act
STEPS = {steps!r}
def looked_up(op, start, end):  # whether the converter looks up an adapter for op there
    versions = [s.since_version for s in defs.get_all_schemas_with_history()
                if s.name == op and s.domain in ("", "ai.onnx")]
    return end in versions and min(versions) <= start if end > start else start in versions
def op_types(graph):
    found = set()
    for node in graph.node:
        found |= {{node.op_type}} if node.domain in ("", "ai.onnx") else set()
        for attr in node.attribute:
            for sub in ([attr.g] if attr.HasField("g") else []) + list(attr.graphs):
                found |= op_types(sub)
    return found
optimized = model
for start, end in STEPS:
    if any(looked_up(op, start, end) and f"{{op}} {{start}}->{{end}}" not in ENABLED
           for op in op_types(optimized.graph)):
        break
    optimized = version_converter.convert_version(optimized, end)
'''
