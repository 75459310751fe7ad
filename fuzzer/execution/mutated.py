"""Materializer of ``source["kind"] == "mutated"`` (registered in
:data:`fuzzer.execution.case.SOURCE_KINDS`): runs in the worker child process.

The parent (a generated, corpus or mutated source) is materialized by its own materializer,
mutated by :func:`generators.mutate.source.mutate_parent` with the case's seed, and fed: the
parent's stored feeds where they still fit the mutated model, else feeds synthesized for it
(:func:`generators.inputs.synthesize_inputs`), rewritten by the input-value policies the
mutation asked for.
"""

from __future__ import annotations

import dataclasses
import functools
import json
from typing import Any

from fuzzer.errors import InputError
from fuzzer.execution.case import Materialized, materializer

#: materialized parents a worker keeps (see :func:`_parent`).
PARENT_CACHE = 64
#: mutations a source may stack through its parents (a coverage-guided pool mutates its own
#: mutants; each level is rebuilt when the case is materialized).
MAX_LINEAGE = 24


def lineage(source: dict[str, Any]) -> int:
    """How many mutations deep ``source`` is (0 for a generated or corpus source)."""
    depth = 0
    while isinstance(source, dict) and source.get("kind") == "mutated":
        depth += 1
        source = source.get("parent")
    return depth


@functools.lru_cache(maxsize=PARENT_CACHE)
def _parent_cached(parent: str, input_seed: int, input_shapes: str) -> Materialized:
    source = json.loads(parent)
    return materializer(source["kind"])(source, input_seed, json.loads(input_shapes))


def _parent(parent: str, input_seed: int, input_shapes: str) -> Materialized:
    """The materialized parent (JSON-encoded arguments), from this worker's cache where a
    case of the same parent ran before: a guided campaign mutates the same pool seeds
    again and again, and rebuilding a parent means rebuilding its whole lineage. The model
    is a copy, so a caller may change it."""
    import onnx

    mat = _parent_cached(parent, input_seed, input_shapes)
    model = onnx.ModelProto()
    model.CopyFrom(mat.model)
    return dataclasses.replace(mat, model=model)


def fitting_shapes(model: Any, shapes: dict[str, list[int]]) -> dict[str, list[int]]:
    """The entries of ``shapes`` whose rank still matches the graph input they name (a rank
    mutation changes it)."""
    ranks = {i.name: len(i.type.tensor_type.shape.dim) for i in model.graph.input
             if i.type.tensor_type.HasField("shape")}
    return {name: dims for name, dims in shapes.items() if ranks.get(name) == len(dims)}


def materialize(source: dict[str, Any], input_seed: int,
                input_shapes: dict[str, list[int]] | None) -> Materialized:
    """Build the mutated model of ``source``.

    Args:
        source: ``{"kind": "mutated", "seed": int, "parent": <a generated, corpus or
            mutated source>}``.
        input_seed: seed of synthesized feeds and of the input-value policies.
        input_shapes: the user's sizes of dynamic dims ``{input name: [dims]}``, or None.

    Returns:
        Materialized with the mutated model, its feeds, the parent's task, and provenance
        ``{"mutators", "feeds", "discarded", "parent": <parent source and its provenance>}``
        plus the parent's ``motifs`` where it has them.

    Raises:
        InputError: a source without a parent or seed, or more than
            :data:`MAX_LINEAGE` mutations deep.
        KeyError: an unknown parent kind.
    """
    from generators.inputs import synthesize_inputs
    from generators.mutate.feeds import apply_policies
    from generators.mutate.source import mutate_parent

    parent = source.get("parent")
    if not isinstance(parent, dict) or "seed" not in source or parent.get("kind") is None:
        raise InputError("a mutated source needs a seed and a parent")
    if lineage(source) > MAX_LINEAGE:
        raise InputError(f"a mutated source more than {MAX_LINEAGE} mutations deep")
    # the parent is built with its own seed, so every mutant of it shares one cache entry
    mat = _parent(json.dumps(parent, sort_keys=True), int(parent.get("seed", input_seed)),
                  json.dumps(input_shapes, sort_keys=True))
    model, feeds, provenance, policies = mutate_parent(mat.model, mat.feeds,
                                                       int(source["seed"]), input_seed,
                                                       check_parent=parent["kind"] != "mutated")
    if feeds is None:
        shapes = fitting_shapes(model, {**(mat.input_shapes or {}), **(input_shapes or {})})
        feeds = apply_policies(policies, synthesize_inputs(model, input_seed, shapes),
                               input_seed)
    provenance["parent"] = {**parent, **mat.provenance}
    if "motifs" in mat.provenance:
        provenance["motifs"] = mat.provenance["motifs"]
    return Materialized(model=model, feeds=feeds, provenance=provenance, task=mat.task,
                        input_shapes=mat.input_shapes)
