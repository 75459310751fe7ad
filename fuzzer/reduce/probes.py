"""Trigger probes: what a minimized failing model needs in order to fail.

Each probe applies one semantics-preserving change to the minimized model on its own and asks
the reducer's predicate whether the failure survives it: the model computes the same outputs,
so a failure that ends says the optimizer depends on that form. The probes:

=====================  ======================================================================
probe                  change
=====================  ======================================================================
``neutral-names``      every tensor renamed ``t0, t1, ...`` (C-Reduce's identifier renaming)
``no-value-info``      every value_info removed (Polygraphy ``surgeon sanitize`` re-infers it)
``explicit-defaults``  every attribute left at its schema default written out (onnx.defs)
``dropped-defaults``   every attribute that holds its schema default removed
``opset-lower``        the default-domain opset one lower (onnx.version_converter)
``opset-higher``       the default-domain opset one higher (onnx.version_converter)
``weights-as-nodes``   initializers turned into Constant nodes
``nodes-as-weights``   Constant nodes turned into initializers (as constant folding does)
=====================  ======================================================================

A probe that does not apply (nothing to change, the converter has no adapter, the checker with
``full_check`` rejects the result) is recorded as None. The idea follows reducers that end
with semantics-preserving canonicalizations (C-Reduce, Perses' normal forms) and Polygraphy's
``debug reduce`` report of what a failure needs; here each change is a separate question, so
the answer reads as one sentence for the bundle's ``trigger`` field.
"""

from __future__ import annotations

from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from fuzzer.findings.rootcause import NAME_CLASH
from fuzzer.modelio.graphs import iter_graphs
from fuzzer.reduce.candidate import MAX_IR_VERSION, Built
from fuzzer.reduce.edits import (
    all_nodes,
    copy_built,
    drop_value_info,
    is_number,
    neutral_names,
    tensor_names,
)
from fuzzer.reduce.predicate import OutOfTime, is_valid
from fuzzer.reduce.reducer import NotReproducible
from fuzzer.registry import Registry

Transform = Callable[[Built], "Built | None"]
Survived = dict[str, "bool | None"]


@dataclass
class Triggers:
    """What the probes found.

    Attributes:
        survived: ``{probe name: True (the failure survived) | False (it ended) | None (the
            probe did not apply or did not run)}`` for every probe of :data:`PROBES`.
        sentence: one sentence: what the failure needs, or which changes it survives.
        neutral: the model with neutral tensor names and no value_info (or neutral names
            only) and its feeds renamed with the graph inputs, where the failure survives it;
            else None.
        complete: False when the predicate's time budget ran out before the last probe.
    """

    survived: Survived = field(default_factory=dict)
    sentence: str = ""
    neutral: Built | None = None
    complete: bool = True


def _schema(node: Any, model: Any) -> Any | None:
    import onnx

    opsets = {o.domain or "": o.version for o in model.opset_import}
    try:
        return onnx.defs.get_schema(node.op_type, opsets.get(node.domain or "", 1),
                                    node.domain or "")
    except Exception:
        return None


def _defaults(node: Any, model: Any) -> dict[str, Any]:
    """``{attribute name: AttributeProto holding its default}`` of ``node``'s schema."""
    import onnx

    schema = _schema(node, model)
    if schema is None:
        return {}
    found = {}
    for name, spec in schema.attributes.items():
        if not spec.required and spec.default_value.type != onnx.AttributeProto.UNDEFINED:
            default = onnx.AttributeProto()
            default.CopyFrom(spec.default_value)
            default.name = name
            found[name] = default
    return found


def _same(a: Any, b: Any) -> bool:
    from onnx import helper

    return a.type == b.type and helper.get_attribute_value(a) == helper.get_attribute_value(b)


def _explicit_defaults(built: Built) -> Built | None:
    new = copy_built(built)
    changed = False
    for node in all_nodes(new.model.graph):
        present = {a.name for a in node.attribute}
        missing = [d for n, d in _defaults(node, new.model).items() if n not in present]
        node.attribute.extend(missing)
        changed |= bool(missing)
    return new if changed else None


def _dropped_defaults(built: Built) -> Built | None:
    new = copy_built(built)
    changed = False
    for node in all_nodes(new.model.graph):
        defaults = _defaults(node, new.model)
        kept = [a for a in node.attribute if a.name not in defaults
                or not _same(a, defaults[a.name])]
        if len(kept) < len(node.attribute):
            del node.attribute[:]
            node.attribute.extend(kept)
            changed = True
    return new if changed else None


def default_opset(model: Any) -> int | None:
    """The default-domain (``ai.onnx``) opset ``model`` imports, or None."""
    return next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), None)


def convert_opset(data: bytes, opset: int) -> bytes | None:
    """``onnx.version_converter`` of a serialized model to default-domain ``opset``, its IR
    version raised where the new opset needs it (capped at what onnxruntime reads); None
    where the converter refuses. Picklable, so a campaign runs it in a sandbox worker (the
    converter is C++ and may abort on an odd model)."""
    import onnx
    from onnx import version_converter

    try:
        model = version_converter.convert_version(onnx.load_model_from_string(data), opset)
        needed = onnx.helper.find_min_ir_version_for(list(model.opset_import), True)
    except Exception:
        return None
    model.ir_version = min(max(model.ir_version, needed), MAX_IR_VERSION)
    return model.SerializeToString()


#: how the opset probes convert a model: ``(serialized model, opset) -> bytes or None``;
#: :func:`probe_triggers` sets it for the probes it runs.
_CONVERT: ContextVar[Callable[[bytes, int], bytes | None]] = ContextVar(
    "convert", default=convert_opset)


def _opset_shift(step: int) -> Transform:
    """The model converted to its default-domain opset plus ``step``."""
    def transform(built: Built) -> Built | None:
        import onnx

        opset = default_opset(built.model)
        if opset is None or not 1 <= opset + step <= onnx.defs.onnx_opset_version():
            return None
        data = _CONVERT.get()(built.model.SerializeToString(), opset + step)
        if data is None:
            return None
        return Built(onnx.load_model_from_string(data), dict(built.feeds))
    return transform


def _weights_as_nodes(built: Built) -> Built | None:
    """Initializers (those not listed among graph inputs) as Constant nodes placed first."""
    from onnx import helper

    new = copy_built(built)
    changed = False
    for g in iter_graphs(new.model.graph):
        listed = {i.name for i in g.input}
        moved = [t for t in g.initializer if t.name not in listed]
        if not moved:
            continue
        changed = True
        kept = [t for t in g.initializer if t.name in listed]
        nodes = [helper.make_node("Constant", [], [t.name], value=t) for t in moved]
        nodes.extend(g.node)
        del g.initializer[:]
        del g.node[:]
        g.initializer.extend(kept)
        g.node.extend(nodes)
    return new if changed else None


#: Constant attribute -> numpy dtype of its value (``value`` holds a TensorProto already).
_CONSTANT_ATTRS: dict[str, type] = {
    "value_float": np.float32, "value_floats": np.float32,
    "value_int": np.int64, "value_ints": np.int64,
    "value_string": np.object_, "value_strings": np.object_,
}


def _constant_tensor(node: Any) -> Any | None:
    """The TensorProto a Constant node produces (named as its output), or None (sparse)."""
    from onnx import TensorProto, helper, numpy_helper

    attr = node.attribute[0] if len(node.attribute) == 1 else None
    if attr is None:
        return None
    if attr.name == "value":
        tensor = TensorProto()
        tensor.CopyFrom(attr.t)
    elif attr.name in _CONSTANT_ATTRS:
        value = np.array(helper.get_attribute_value(attr), dtype=_CONSTANT_ATTRS[attr.name])
        tensor = numpy_helper.from_array(value)
    else:
        return None
    tensor.name = node.output[0]
    return tensor


def _nodes_as_weights(built: Built) -> Built | None:
    """Default-domain Constant nodes as initializers (also listed as graph inputs below IR 4,
    where every initializer must be)."""
    from onnx import helper

    new = copy_built(built)
    changed = False
    for g in iter_graphs(new.model.graph):
        kept = []
        for node in g.node:
            tensor = _constant_tensor(node) if node.op_type == "Constant" and \
                node.domain in ("", "ai.onnx") else None
            if tensor is None:
                kept.append(node)
                continue
            g.initializer.append(tensor)
            if new.model.ir_version < 4:
                g.input.append(helper.make_tensor_value_info(
                    tensor.name, tensor.data_type, list(tensor.dims)))
        if len(kept) < len(g.node):
            changed = True
            del g.node[:]
            g.node.extend(kept)
    return new if changed else None


def _join(parts: list[str]) -> str:
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]


def _names_needed(model: Any, survived: Survived) -> str:
    if any(is_number(name) for name in tensor_names(model)):
        return NAME_CLASH
    return "its own tensor names"


def _opset_needed(step: int) -> Callable[[Any, Survived], str | None]:
    """The clause for a failure that ended at ``opset + step``; both directions ending
    give one clause (written by the lower probe)."""
    def needs(model: Any, survived: Survived) -> str | None:
        opset = default_opset(model)
        other = survived.get("opset-higher" if step < 0 else "opset-lower")
        if other is False:
            return f"exactly opset {opset}" if step < 0 else None
        return f"opset {opset} or {'higher' if step < 0 else 'lower'}"
    return needs


def _fixed(clause: str) -> Callable[[Any, Survived], str]:
    return lambda model, survived: clause


@dataclass(frozen=True)
class Probe:
    """One probe: ``transform`` (None where it does not apply), ``needs`` (the clause of the
    sentence when the failure ends; None adds nothing), and ``group``: the phrase of the
    sentence when every probe of the group that ran survived."""

    transform: Transform
    needs: Callable[[Any, Survived], str | None]
    group: str


#: probe name -> probe, run in this order; groups are phrased in the order they first appear.
PROBES: Registry[Probe] = Registry("probe", {
    "neutral-names": Probe(neutral_names, _names_needed, "neutral names"),
    "no-value-info": Probe(drop_value_info, _fixed("its value_info"), "no value_info"),
    "explicit-defaults": Probe(_explicit_defaults, _fixed("its default attributes left out"),
                               "explicit and dropped default attributes"),
    "dropped-defaults": Probe(_dropped_defaults, _fixed("its default attributes written out"),
                              "explicit and dropped default attributes"),
    "opset-lower": Probe(_opset_shift(-1), _opset_needed(-1), "other opsets"),
    "opset-higher": Probe(_opset_shift(+1), _opset_needed(+1), "other opsets"),
    "weights-as-nodes": Probe(_weights_as_nodes, _fixed("its weights as initializers"),
                              "both weight forms"),
    "nodes-as-weights": Probe(_nodes_as_weights, _fixed("its weights as Constant nodes"),
                              "both weight forms"),
})


def sentence(model: Any, survived: Survived) -> str:
    """The one sentence for ``survived`` (see :class:`Triggers`) on ``model``: "needs ..."
    where some probe ended the failure, else "survives ..." listing what was tried."""
    needs = [PROBES[name].needs(model, survived) for name, ok in survived.items()
             if ok is False]
    clauses = [c for c in dict.fromkeys(needs) if c]
    if clauses:
        return "needs " + _join(clauses)
    groups = list(dict.fromkeys(PROBES[name].group for name, ok in survived.items() if ok))
    return "survives " + _join(groups) if groups else "no probe applies to this model"


def probe_triggers(model: Any, feeds: dict[str, np.ndarray],
                   still_fails: Callable[[Built], bool],
                   validate: Callable[[Any], bool] = is_valid,
                   convert: Callable[[bytes, int], bytes | None] = convert_opset) -> Triggers:
    """Run every probe of :data:`PROBES` on ``model``, each on its own.

    Args:
        model: the minimized failing ``onnx.ModelProto`` (not modified).
        feeds: its input feeds ``{graph input name: ndarray}`` (any dtypes and shapes).
        still_fails: the reducer's predicate, e.g. a
            :class:`fuzzer.reduce.signature_check.SignatureCheck`; True where the candidate
            still fails the same way.
        validate: the validity gate of the changed models (onnx.checker with ``full_check``
            by default; a campaign passes
            :func:`fuzzer.reduce.predicate.sandboxed_validator`); a rejected one counts as
            a probe that does not apply.
        convert: the opset converter of the opset probes (:func:`convert_opset` in this
            process by default; a campaign passes one that runs it in a sandbox worker).

    Returns:
        :class:`Triggers`; with ``complete`` False when ``still_fails`` raised
        :class:`fuzzer.reduce.predicate.OutOfTime` (the probes not run are None).

    Raises:
        NotReproducible: ``model`` itself does not fail under ``still_fails``.
        OutOfTime: the budget ran out before ``model`` itself could be checked.
    """
    start = Built(model, dict(feeds))
    if not still_fails(start):
        raise NotReproducible("the model does not fail under the check")
    triggers = Triggers(survived=dict.fromkeys(PROBES))
    token = _CONVERT.set(convert)
    try:
        for name, probe in PROBES.items():
            candidate = probe.transform(start)
            if candidate is not None and validate(candidate.model):
                triggers.survived[name] = bool(still_fails(candidate))
        if triggers.survived["neutral-names"]:
            triggers.neutral = _neutral(start, still_fails, validate)
    except OutOfTime:
        triggers.complete = False
    finally:
        _CONVERT.reset(token)
    triggers.sentence = sentence(model, triggers.survived)
    return triggers


def _neutral(start: Built, still_fails: Callable[[Built], bool],
             validate: Callable[[Any], bool]) -> Built:
    """Neutral names without value_info where the failure survives that, else neutral names
    (known to survive)."""
    renamed = neutral_names(start)
    stripped = drop_value_info(renamed)
    if stripped is not None and validate(stripped.model) and still_fails(stripped):
        return stripped
    return renamed
