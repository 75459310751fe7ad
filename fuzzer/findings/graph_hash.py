"""A Weisfeiler-Lehman hash of *what the responsible passes changed* in a graph.

design.md asks for a WL hash of the graph to split distinct root causes that share a message.
The signature is needed before reduction (it names the bundle, and reduction only runs for a
new one), so the minimized graph does not exist yet, and hashing the whole original graph
would give every seed its own bundle. What is hashed instead is the **change region**: the
main-graph nodes that the optimizer removed, added or modified, when it is run with the
localized (responsible) passes only, so that the other passes of the list do not add noise.

* Nodes are matched by their output names (optimizers keep them on surviving nodes). An
  original node without a partner of the same op type is *removed* (``-Op``), an optimized
  one *added* (``+Op``), a partner with other attributes or another input count *modified*
  (``~Op``). A node whose inputs were only renamed (a rewired consumer) is not a change, nor
  is a removed/added pair with the same op type, attributes and input count (a producer whose
  output was renamed, e.g. when the Identity after it was eliminated): such nodes depend on
  the surrounding model, not on the bug.
* Changed nodes are joined when a tensor produced by one is read or produced by another.
* Each connected component is hashed with ``networkx.weisfeiler_lehman_graph_hash``
  (Shervashidze et al., "Weisfeiler-Lehman Graph Kernels", JMLR 12, 2011; 3 iterations, node
  label = sign + op type); the *set* of distinct component hashes is hashed again. The same
  rewrite applied once or five times, anywhere in any model, hashes the same.

Only symptoms whose message says nothing about the cause carry the hash (their registry
record has ``footprint``: "N of M values differ" fits every wrong rewrite). Checker,
onnxruntime and optimizer messages name the broken rule already, and the change region of one
such bug varies with the model around it (a Conv with or without bias, a BatchNormalization
fed by Constant nodes or initializers): hashing them opened one bundle per model for one bug.
``metadata-change`` and ``bloat`` are about the interface and the size, which the message and
the passes describe. A campaign keeps at most ``MAX_GRAPH_VARIANTS`` bundles per message
(``fuzzer.findings.dedup``), so even a hash that varies too much cannot flood the output folder.
No optimized model (crashes, hangs) or no node change: no graph hash; the message (with
the optimizer's ``file.h:line`` where it has one) is then the finest key.
"""

from __future__ import annotations

import hashlib
from functools import lru_cache
from typing import Any

WL_ITERATIONS = 3
#: distinct change regions whose hash :func:`region_hash` keeps.
REGION_MEMO = 4096

#: bundles kept per signature core (signature without the graph hash); further variants
#: count as hits on the first.
MAX_GRAPH_VARIANTS = 3


def _attrs(node: Any) -> bytes:
    return b"".join(a.SerializeToString() for a in sorted(node.attribute, key=lambda a: a.name))


def _key(node: Any) -> tuple[str, bytes, int]:
    return node.op_type, _attrs(node), len(node.input)


def change_region(original: Any, optimized: Any) -> list[tuple[str, list[str], list[str]]]:
    """Changed nodes of the main graph as ``(label, inputs, outputs)``; label is ``-Op``,
    ``+Op`` or ``~Op`` (see module docstring). Arguments are ``onnx.ModelProto``."""
    before = {tuple(n.output): n for n in original.graph.node}
    after = {tuple(n.output): n for n in optimized.graph.node}
    removed, added, region = [], [], []
    for key, node in before.items():
        other = after.get(key)
        if other is None or other.op_type != node.op_type:
            removed.append(node)
        elif _attrs(other) != _attrs(node) or len(other.input) != len(node.input):
            region.append((f"~{node.op_type}", list(other.input), list(other.output)))
    for key, node in after.items():
        other = before.get(key)
        if other is None or other.op_type != node.op_type:
            added.append(node)
    pending: dict[tuple[str, bytes, int], int] = {}
    for node in added:
        pending[_key(node)] = pending.get(_key(node), 0) + 1
    renamed: dict[tuple[str, bytes, int], int] = {}
    for node in removed:
        key = _key(node)
        if pending.get(key, 0) > 0:  # the same node under another output name
            pending[key] -= 1
            renamed[key] = renamed.get(key, 0) + 1
        else:
            region.append((f"-{node.op_type}", list(node.input), list(node.output)))
    for node in added:
        key = _key(node)
        if renamed.get(key, 0) > 0:
            renamed[key] -= 1
        else:
            region.append((f"+{node.op_type}", list(node.input), list(node.output)))
    return region


def canonical_region(region: list[tuple[str, list[str], list[str]]]) \
        -> tuple[tuple[str, tuple[int, ...], tuple[int, ...]], ...]:
    """``region`` with each tensor name replaced by the order of its first appearance: two
    regions that differ only in their tensor names (the model around the same rewrite) give
    the same tuple, and the same tuple is the same graph, so it keys :func:`region_hash`'s
    memo."""
    ids: dict[str, int] = {}

    def number(names: list[str]) -> tuple[int, ...]:
        return tuple(ids.setdefault(name, len(ids)) if name else -1 for name in names)

    return tuple((label, number(inputs), number(outputs)) for label, inputs, outputs in region)


def region_hash(region: list[tuple[str, list[str], list[str]]]) -> str | None:
    """8 hex digits: sha256 over the sorted distinct WL hashes of the region's connected
    components; None for an empty region. Memoized on :func:`canonical_region` (the WL hash
    of a few nodes takes about 0.7 ms, and a campaign hashes the same rewrite at every hit)."""
    if not region:
        return None
    return _hash_canonical(canonical_region(region))


@lru_cache(maxsize=REGION_MEMO)
def _hash_canonical(region: tuple[tuple[str, tuple[int, ...], tuple[int, ...]], ...]) -> str:
    import networkx as nx

    graph = nx.Graph()
    producers: dict[int, list[int]] = {}
    for index, (label, _, outputs) in enumerate(region):
        graph.add_node(index, label=label)
        for name in outputs:
            if name >= 0:
                producers.setdefault(name, []).append(index)
    for index, (_, inputs, outputs) in enumerate(region):
        for name in (*inputs, *outputs):
            for other in producers.get(name, ()):
                if other != index:
                    graph.add_edge(index, other)
    hashes = sorted({nx.weisfeiler_lehman_graph_hash(graph.subgraph(c), node_attr="label",
                                                     iterations=WL_ITERATIONS)
                     for c in nx.connected_components(graph)})
    return hashlib.sha256("\n".join(hashes).encode()).hexdigest()[:8]


def change_hash(original: bytes, optimized: bytes | None) -> str | None:
    """The WL hash of the change region between two serialized models, or None when there is
    no optimized model, it cannot be parsed, or no node changed."""
    import onnx

    if optimized is None:
        return None
    try:
        models = []
        for data in (original, optimized):
            model = onnx.ModelProto()
            model.ParseFromString(data)
            models.append(model)
    except Exception:
        return None
    return region_hash(change_region(*models))
