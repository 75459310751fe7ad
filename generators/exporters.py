"""How each major exporter shapes the models it writes (registry :data:`EXPORTERS`; a new
exporter is one new entry).

A profile holds what the interface forms of :mod:`generators.interfaces` read to make a
generated model look like that exporter's: the producer fields, the graph's name, the names
it gives symbolic dims, where it keeps constants (initializers, Constant nodes, or as the
graph was built), doc strings and metadata. Tensor and node names come from the model's name
style (:mod:`generators.names`); a profile lists the styles it fits.

- ``torchscript``: ``torch.onnx.export`` (TorchScript): graph ``main_graph`` (older
  releases ``torch-jit-export``), dims named by the caller's ``dynamic_axes``
  (``batch_size``, ``sequence_length``) or ``<input>_dynamic_axes_<n>``; folded weights
  are initializers (``onnx::Conv_12``), small int64 constants (shapes, axes) Constant nodes.
- ``torch_dynamo``: ``torch.onnx.export(..., dynamo=True)`` (opset 18 and later): dims
  ``s0``, ``s77``, derived dims as expressions (``2*s0``, ``s0 + 1``); constants are
  initializers; nodes carry ``pkg.torch.onnx.*`` metadata_props (IR 10 and later).
- ``tf2onnx``: graph ``tf2onnx``, doc string ``converted from ...``, unknown dims named
  ``unk__<n>``; every constant folded into an initializer.
- ``keras2onnx``: producer domain ``onnxmltools``, the batch dim ``N``, the Keras model's
  name as the graph's; constants as initializers.
- ``skl2onnx``: producer domain ``ai.onnx``, a hexadecimal uuid as the graph's name, dims
  of unknown size without a name (``None`` in ``FloatTensorType([None, 4])``).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field

from fuzzer.registry import Registry


@dataclass(frozen=True)
class Exporter:
    """One exporter's shape of a model.

    Attributes:
        name: registry name.
        producer: ``ModelProto.producer_name``.
        versions: ``producer_version`` values to draw from.
        styles: name styles (:data:`generators.names.STYLE_NAMES`) whose names it writes.
        graph_name: draws the graph's name.
        dims: names it gives symbolic dims; ``""`` stands for a dim with neither
            ``dim_value`` nor ``dim_param``.
        expressions: dim names of derived dims (``2*s0``), or empty.
        constants: where constants go, a key of
            :data:`generators.interfaces.CONSTANT_PLACEMENTS`: ``"initializer"`` (Constant
            nodes become initializers), ``"small-as-constant"`` (small int64 initializers
            become Constant nodes), ``"keep"``.
        domain: ``ModelProto.domain`` (``""``: unset).
        graph_doc: ``GraphProto.doc_string`` (``""``: unset).
        metadata: ``ModelProto.metadata_props`` entries.
        node_metadata: keys of ``NodeProto.metadata_props`` it writes (IR 10 and later).
        since: lowest opset it writes.
    """

    name: str
    producer: str
    versions: tuple[str, ...]
    styles: frozenset[str]
    graph_name: Callable[[random.Random], str]
    dims: tuple[str, ...]
    expressions: tuple[str, ...] = ()
    constants: str = "keep"
    domain: str = ""
    graph_doc: str = ""
    metadata: tuple[tuple[str, str], ...] = ()
    node_metadata: tuple[str, ...] = field(default=())
    since: int = 7


def _fixed(name: str) -> Callable[[random.Random], str]:
    return lambda rng: name


def _uuid(rng: random.Random) -> str:
    return f"{rng.getrandbits(128):032x}"


EXPORTERS: Registry[Exporter] = Registry("exporter", {
    "torchscript": Exporter(
        "torchscript", "pytorch", ("1.13.1", "2.1.0", "2.4.1"),
        frozenset({"torch_new", "torch_old", "mixed"}),
        lambda rng: rng.choice(("main_graph", "torch-jit-export")),
        ("batch_size", "sequence_length", "batch", "input_dynamic_axes_1", "height", "width"),
        constants="small-as-constant"),
    "torch_dynamo": Exporter(
        "torch_dynamo", "pytorch", ("2.5.0", "2.6.0", "2.7.1"),
        frozenset({"torch_dynamo", "mixed"}), _fixed("main_graph"),
        ("s0", "s1", "s77", "batch"), ("2*s0", "s0 + 1", "s1//2", "s0*s1"),
        constants="initializer",
        node_metadata=("namespace", "pkg.torch.onnx.class_hierarchy",
                       "pkg.torch.onnx.name_scopes", "pkg.torch.onnx.stack_trace"),
        since=18),
    "tf2onnx": Exporter(
        "tf2onnx", "tf2onnx", ("1.9.3 1190aa", "1.16.1 15c810"),
        frozenset({"tf2onnx", "mixed"}), _fixed("tf2onnx"),
        ("unk__123", "unk__57", "N"), constants="initializer",
        graph_doc="converted from saved_model"),
    "keras2onnx": Exporter(
        "keras2onnx", "keras2onnx", ("1.7.0",), frozenset({"tf2onnx", "plain", "mixed"}),
        lambda rng: rng.choice(("sequential", "functional_1", "model")), ("N",),
        constants="initializer", domain="onnxmltools"),
    "skl2onnx": Exporter(
        "skl2onnx", "skl2onnx", ("1.16.0", "1.17.0"), frozenset({"plain", "mixed"}), _uuid,
        ("",), constants="initializer", domain="ai.onnx",
        metadata=(("sklearn_version", "1.5.2"),)),
})

#: dim names where the model follows no exporter: what exporters write most.
GENERIC_DIMS: tuple[str, ...] = ("batch", "N", "batch_size", "sequence_length", "unk__123",
                                 "height", "width", "d0")
#: derived-dim expressions where the model follows no exporter.
GENERIC_EXPRESSIONS: tuple[str, ...] = ("2*s0", "s0 + 1", "batch_size*4", "floor(s1/2)")


def fitting(style: str, opset: int) -> list[Exporter]:
    """Exporters whose names are those of name style ``style`` and that write ``opset``."""
    return [e for e in EXPORTERS.values() if style in e.styles and e.since <= opset]
