"""Recorded values: every main-graph tensor of the original model, from one reference run.

A cut or a deleted node leaves tensors whose producer is gone; the reducer feeds them the
value they had in the original run, so the part of the model that remains computes exactly
what it computed before (Polygraphy ``debug reduce`` does the same with layerwise outputs).
Call :func:`record_sandboxed` from a campaign: the run (and shape inference) happens in a
sandbox worker, so a model that crashes onnxruntime cannot take the campaign down. The worker
writes the values to ``.npy`` files in a temporary folder and the reducer loads only those a
candidate needs (:class:`StoredValues`): a model's intermediate tensors can take gigabytes
(1 GB for a 1,493-node detector at 800x608), and sending them all back through the worker's
pipe took longer than most of the reduction.

Neither call ships the whole model: shape inference gets its :func:`skeleton` (the large
floating-point initializers without their data) and a recording run only the part of the
model the wanted tensors depend on (:func:`pruned`). For a 54 MB OCR model the types took
0.5 s and each recording 0.5 s, mostly pickling, parsing and loading weights it never used.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from fuzzer.reduce.graph import ancestors, copy_fields, produced_names, reads, with_graph


@dataclass
class Recorded:
    """Values and types of the original model's tensors.

    Attributes:
        values: ``{tensor name: ndarray}`` for every main-graph tensor onnxruntime could
            return (graph inputs included, sequences and optionals left out).
        types: ``{tensor name: TypeProto}`` from strict-free shape inference of the original
            (may hold symbolic dims, so a dynamic model stays dynamic).
    """

    values: Mapping[str, np.ndarray] = field(default_factory=dict)
    types: dict[str, Any] = field(default_factory=dict)

    def expect(self, names: Iterable[str]) -> None:
        """Announce the values likely needed next (see :meth:`StoredValues.expect`)."""
        if isinstance(self.values, StoredValues):
            self.values.expect(names)


class StoredValues(Mapping[str, np.ndarray]):
    """Recorded values kept as ``.npy`` files in a temporary folder, recorded on demand and
    loaded on first use (then kept in memory); the folder is removed when the mapping is
    garbage-collected.

    A value asked for that is not recorded yet is recorded together with every name last
    announced by :meth:`expect` and not recorded yet, in one run. Polygraphy ``debug
    reduce`` likewise runs onnxruntime for the tensors it needs only when it needs them.

    Args:
        fetch: ``fetch(names, folder) -> {name: file name}`` records those of ``names`` it
            can into ``folder``.
        names: every name that may be recorded (the tensors nodes produce).
        feeds: values known already (the graph inputs), or None.
    """

    def __init__(self, fetch: Callable[[list[str], str], dict[str, str]],
                 names: Iterable[str], feeds: dict[str, np.ndarray] | None = None) -> None:
        self._fetch = fetch
        self._folder = tempfile.TemporaryDirectory(prefix="optfuzz-values-")
        self._names = dict.fromkeys([*(feeds or {}), *names])
        self._loaded: dict[str, np.ndarray] = dict(feeds or {})
        self._files: dict[str, str] = {}
        self._tried: set[str] = set(self._loaded)
        self._expected: list[str] = []

    def expect(self, names: Iterable[str]) -> None:
        """Names the next values asked for are likely among (recorded with the next miss)."""
        self._expected = [n for n in names if n in self._names]

    def __getitem__(self, name: str) -> np.ndarray:
        if name not in self._names:
            raise KeyError(name)
        if name not in self._tried:
            batch = list(dict.fromkeys(n for n in [name, *self._expected]
                                       if n not in self._tried))
            self._files.update(self._fetch(batch, self._folder.name))
            self._tried.update(batch)
        if name not in self._loaded:
            if name not in self._files:
                raise KeyError(name)
            self._loaded[name] = np.load(Path(self._folder.name) / self._files[name],
                                         allow_pickle=False)
        return self._loaded[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._names)

    def __len__(self) -> int:
        return len(self._names)


def infer_types(model: Any) -> dict[str, Any]:
    """``{name: TypeProto}`` of graph inputs, outputs and inferred value_info (main graph);
    empty when shape inference fails."""
    import onnx

    try:
        inferred = onnx.shape_inference.infer_shapes(model)
    except Exception:
        inferred = model
    graph = inferred.graph
    return {v.name: v.type for v in [*graph.input, *graph.value_info, *graph.output]
            if v.type.HasField("tensor_type")}


def record(model: Any, feeds: dict[str, np.ndarray] | None,
           names: Iterable[str] | None = None) -> Recorded:
    """Run ``model`` once in onnxruntime with intermediate tensors as graph outputs.

    Args:
        model: the original ``onnx.ModelProto`` (not modified).
        feeds: its input feeds ``{name: ndarray}``; None synthesizes inputs (seed 0).
        names: the tensors to record (onnxruntime then runs only the nodes they need);
            None records every tensor a node produces, and the types too.

    Returns:
        A :class:`Recorded` with the feeds among its values; ``values`` holds only the feeds
        when the run fails.
    """
    import onnx

    from fuzzer.execution.reference import make_session, run_session

    if feeds is None:
        from generators.inputs import synthesize_inputs

        feeds = synthesize_inputs(model, 0, {})
    recorded = Recorded(values=dict(feeds), types=infer_types(model) if names is None else {})
    probe = onnx.ModelProto()
    probe.CopyFrom(model)
    made = set(produced_names(probe.graph))
    wanted = [n for n in dict.fromkeys(produced_names(probe.graph) if names is None else names)
              if n in made]
    if not wanted:
        return recorded
    declared = {o.name: o for o in probe.graph.output}
    outputs = [declared.get(n) or onnx.ValueInfoProto(name=n) for n in wanted]
    del probe.graph.output[:]
    probe.graph.output.extend(outputs)
    try:
        values = run_session(make_session(probe.SerializeToString()), feeds)
    except Exception:
        return recorded
    for name, value in values.items():
        if isinstance(value, np.ndarray) and value.dtype != object:
            recorded.values[name] = value
    return recorded


#: initializers of a floating-point type with at least this many elements go to shape
#: inference without their data: inference reads their type and dims, and reads values only
#: of shape-like operands (Reshape's shape, Resize's scales), which are integers or small.
LARGE_ELEMENTS = 1024

_FLOATING = frozenset({1, 10, 11, 16, 17, 18, 19, 20, 23})  # TensorProto float types


def skeleton(model: Any) -> Any:
    """A copy of ``model`` whose large floating-point initializers (see
    :data:`LARGE_ELEMENTS`) keep their name, type and dims but no data. Where inference would
    have read such data, non-strict inference leaves the tensors after it untyped, never
    wrongly typed."""
    import onnx

    graph = onnx.GraphProto()
    copy_fields(model.graph, graph, ("initializer",))
    for tensor in model.graph.initializer:
        if tensor.data_type in _FLOATING and tensor.data_location != onnx.TensorProto.EXTERNAL \
                and int(np.prod(tensor.dims)) >= LARGE_ELEMENTS:
            graph.initializer.add(name=tensor.name, dims=tensor.dims,
                                  data_type=tensor.data_type)
        else:
            graph.initializer.append(tensor)
    return with_graph(model, graph)


def pruned(model: Any, names: Iterable[str]) -> Any:
    """The part of ``model`` that ``names`` depend on: the nodes they need and the
    initializers those read. Every graph input that needs a feed is kept, so inputs
    synthesized for it are those of ``model``."""
    import onnx

    graph = model.graph
    wanted = set(names)
    nodes = [graph.node[i] for i in ancestors(graph.node, wanted)]
    read = {n for node in nodes for n in reads(node)}
    inits = {t.name for t in graph.initializer}
    light = onnx.GraphProto(name=graph.name)
    light.node.extend(nodes)
    light.initializer.extend(t for t in graph.initializer if t.name in read)
    light.sparse_initializer.extend(graph.sparse_initializer)
    light.input.extend(i for i in graph.input if i.name not in inits or i.name in read)
    light.output.extend(o for o in graph.output if o.name in wanted)
    return with_graph(model, light)


def _types_of_bytes(data: bytes) -> dict[str, Any]:
    """:func:`infer_types` of a serialized model."""
    import onnx

    model = onnx.ModelProto()
    model.ParseFromString(data)
    return infer_types(model)


def _record_to_folder(data: bytes, feeds: dict[str, np.ndarray] | None, names: list[str],
                      folder: str) -> dict[str, str]:
    """:func:`record` of ``names`` in a serialized model, each value saved in ``folder``
    as ``<n>.npy`` (``n`` counting on from the files already there); returns
    ``{tensor name: file name}`` (the feeds are not saved)."""
    import onnx

    model = onnx.ModelProto()
    model.ParseFromString(data)
    values = record(model, feeds, names).values
    start = len(list(Path(folder).iterdir()))
    files = {}
    for index, name in enumerate(n for n in names if n in values):
        files[name] = f"{start + index}.npy"
        np.save(Path(folder) / files[name], values[name], allow_pickle=False)
    return files


def record_sandboxed(sandbox: Any, model: Any, feeds: dict[str, np.ndarray] | None) -> Recorded:
    """:func:`record` run in ``sandbox``'s workers, lazily: the types now, each value when
    first needed (:class:`StoredValues`); only the feeds are known where the worker dies,
    hangs or fails."""
    try:
        types = sandbox.call(_types_of_bytes, skeleton(model).SerializeToString())
    except Exception:
        types = {}

    def fetch(names: list[str], folder: str) -> dict[str, str]:
        try:
            return sandbox.call(_record_to_folder, pruned(model, names).SerializeToString(),
                                feeds, names, folder)
        except Exception:
            return {}

    return Recorded(StoredValues(fetch, produced_names(model.graph), feeds), types)
