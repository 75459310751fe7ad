"""Materializer of ``source["kind"] == "corpus"``: runs in the worker child process.

Reads the model from ``source["path"]`` with :func:`fuzzer.modelio.load_model` (external
data must stay inside the model's folder), checking its sha256 against ``source["sha256"]``,
and picks its feeds: stored test data (``source["inputs"]``) first, else realistic feeds from
the per-model spec (``source["spec"]``, :mod:`fuzzer.corpus.feeds`), else ``None`` (the
worker synthesizes them with :mod:`generators.inputs`).
"""

from __future__ import annotations

from pathlib import Path

from fuzzer.corpus.feeds import spec_feeds, spec_shapes
from fuzzer.corpus.model import sha256_file
from fuzzer.corpus.testdata import load_feeds
from fuzzer.errors import InputError
from fuzzer.execution.case import Materialized
from fuzzer.modelio.load import load_model


def materialize(source: dict, input_seed: int, input_shapes: dict | None) -> Materialized:
    """Build the Materialized corpus model of ``source``.

    Args:
        source: ``{"kind": "corpus", "model": id, "sha256": hex, "path": str}`` plus optional
            ``"inputs"`` (folder of ``input_<i>.pb``), ``"spec"`` (input spec) and ``"task"``.
        input_seed: seed of the realistic feeds.
        input_shapes: the user's sizes of dynamic dims ``{input name: [dims]}``, or ``None``.

    Returns:
        Materialized with the ModelProto, feeds (stored, spec-based or ``None``), the task and
        the spec's default input shapes.

    Raises:
        InputError: the file is missing, changed since it was listed (sha256 differs),
            unreadable, or has external data outside its folder; or its spec is unusable.
    """
    path = Path(source["path"])
    if not path.is_file():
        raise InputError(f"corpus model {source.get('model')} not found at {path}")
    digest = sha256_file(path)
    if source.get("sha256") and digest != source["sha256"]:
        raise InputError(f"corpus model {source.get('model')}: sha256 {digest[:12]}... differs "
                         f"from the listed {source['sha256'][:12]}...")
    model = load_model(path)
    spec = source.get("spec") or {}
    feeds = None
    if source.get("inputs"):
        feeds = load_feeds(Path(source["inputs"]), model)
    if feeds is None and spec:
        try:
            feeds = spec_feeds(model, spec, input_seed, input_shapes)
        except ValueError as exc:
            raise InputError(f"corpus model {source.get('model')}: {exc}") from None
    shapes = spec_shapes(spec) or None
    return Materialized(model=model, feeds=feeds, task=source.get("task"),
                        input_shapes=shapes, provenance={"sha256": digest})
