"""How the report's standalone repro gets the minimized model: as ONNX text
(``onnx.printer.to_text``) it parses back with ``onnx.parser.parse_model``, since GitHub
takes no .onnx attachment.

The text is used only where parsing it gives the model back exactly (same nodes,
attributes, initializer values bit for bit, interface, value_info, opsets and IR version;
the encoding of a tensor, an empty node domain and doc strings, which are comments, aside).
The printer writes the name of an attribute tensor (a Constant node's value), which the
parser cannot read back where it is no plain identifier (``"onnx::Pad_38"``) and which onnx
ignores: where that is all that stops the round trip, those names are left out and the
report says so. A model
whose text still does not come back (or is larger than :data:`MAX_EMBEDDED` characters)
is carried as its serialized bytes in base64; a larger one is loaded from the attached
model.onnx.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from typing import Any

from fuzzer.modelio.graphs import iter_graphs, iter_tensors

#: most characters of model text (or base64) a repro carries.
MAX_EMBEDDED = 24_000
#: characters per line of base64.
BASE64_WIDTH = 76


@dataclass(frozen=True)
class ModelSource:
    """Python lines that define ``model`` in the standalone repro.

    Attributes:
        lines: the lines (no final newline), data included.
        data_lines: how many of them are the model's data (text or base64), which the
            repro's line budget does not count.
        imports: the modules those lines import beyond ``onnx``.
        note: what the reader should know about how the model is carried, or None.
    """

    lines: list[str]
    data_lines: int
    imports: tuple[str, ...] = ()
    note: str | None = None


def _drop_doc_strings(message: Any) -> None:
    """Clear every ``doc_string`` of the protobuf ``message`` and of the messages it holds
    (the ONNX text carries none; they are comments)."""
    from google.protobuf.message import Message

    for descriptor, value in message.ListFields():
        if descriptor.name == "doc_string":
            message.ClearField("doc_string")
        elif descriptor.type == descriptor.TYPE_MESSAGE:
            for item in [value] if isinstance(value, Message) else value:
                _drop_doc_strings(item)


def canonical(model: Any) -> bytes:
    """``model`` serialized after every tensor is written in one encoding (numpy's round
    trip), every empty node domain is cleared and every doc string is dropped: equal for two
    models that mean the same, whatever encoding the printed text or a producer chose."""
    import onnx
    from onnx import numpy_helper

    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    _drop_doc_strings(copy)
    for graph in iter_graphs(copy.graph):
        for node in graph.node:
            if not node.domain:
                node.ClearField("domain")
    for tensor in iter_tensors(copy.graph):
        try:
            tensor.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(tensor),
                                                    tensor.name))
        except Exception:  # a type numpy cannot hold: compared as written
            continue
    return copy.SerializeToString()


def without_constant_names(model: Any) -> Any:
    """A copy of ``model`` whose attribute tensors (a Constant node's value) have no name
    (the ONNX text parser cannot read one back that is no plain identifier)."""
    import onnx

    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    for graph in iter_graphs(copy.graph):
        for node in graph.node:
            for attr in node.attribute:
                if attr.HasField("t"):
                    attr.t.ClearField("name")
    return copy


def round_trip_text(model: Any) -> str | None:
    """The ONNX text of ``model`` where ``onnx.parser.parse_model`` gives ``model`` back
    (:func:`canonical`), else None."""
    import onnx

    try:
        text = onnx.printer.to_text(model)
        back = onnx.parser.parse_model(text)
    except Exception:  # the printer or the parser does not handle this model
        return None
    return text if canonical(back) == canonical(model) else None


def python_string(text: str) -> list[str]:
    """``text`` (ending with a newline) as the lines of a triple-quoted Python string
    literal that starts with a line continuation: ``\"\"\"\\``, the text, ``\"\"\"``."""
    body = text.replace("\\", "\\\\").replace('"""', '\\"\\"\\"')
    return ['"""\\', *body.rstrip("\n").split("\n"), '"""']


def _from_text(text: str, note: str | None) -> ModelSource:
    literal = python_string(text)
    lines = [f"MODEL = {literal[0]}", *literal[1:],
             "model = onnx.parser.parse_model(MODEL)"]
    return ModelSource(lines, len(literal) - 2, note=note)


def _from_bytes(data: bytes, why: str) -> ModelSource:
    encoded = base64.b64encode(data).decode()
    chunks = [encoded[i:i + BASE64_WIDTH] for i in range(0, len(encoded), BASE64_WIDTH)]
    lines = ["MODEL = (", *(f'    "{chunk}"' for chunk in chunks), ")",
             "model = onnx.load_from_string(base64.b64decode(MODEL))"]
    return ModelSource(lines, len(chunks), imports=("base64",),
                       note=f"{why}, so the script carries the model's bytes (base64).")


#: the standalone repro's model where it is too large to carry: the attachment's.
FROM_FILE = ModelSource(['model = onnx.load("model.onnx")  # from the attached zip'], 0,
                        note="The model is too large to carry in the script: it loads "
                             "model.onnx from the attached zip.")


#: the note of a model whose ONNX text leaves out the names of attribute tensors.
UNNAMED = ("The ONNX text leaves out the names of the Constant nodes' value tensors, which "
           "its parser cannot read back (onnx ignores them).")


def model_source(model: Any) -> ModelSource:
    """How the standalone repro defines ``model`` (a ModelProto; see the module docstring):
    its ONNX text, that text without the names of Constant nodes' value tensors, its bytes
    in base64, or the attached model.onnx: the first that gives the model back exactly and
    fits in :data:`MAX_EMBEDDED` characters."""
    unnamed = without_constant_names(model)
    candidates = [(model, None)] + ([(unnamed, UNNAMED)] if canonical(unnamed) !=
                                    canonical(model) else [])
    why = "Parsing the ONNX text does not give this model back exactly"
    for candidate, note in candidates:
        text = round_trip_text(candidate)
        if text is not None and len(text) <= MAX_EMBEDDED:
            return _from_text(text, note)
        if text is not None:
            why = "The model's ONNX text is too long to carry"
            break
    data = model.SerializeToString()
    if len(data) * 4 // 3 <= MAX_EMBEDDED:
        return _from_bytes(data, why)
    return FROM_FILE
