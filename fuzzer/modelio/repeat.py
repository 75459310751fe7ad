"""Models that can be scaled: a run of repeated blocks in the main graph (a chain of Relu
nodes, a stack of identical layers), and the same model with more or fewer blocks.

A *run* is ``count`` consecutive blocks of ``period`` nodes (in node-list order) that are
alike: the same op types, domains and attributes at each position, inputs read from the
same relative place (the node ``d`` places earlier and its output number, the same graph
input or outer tensor, or an initializer of the same dtype and dims), and no graph-valued
attribute. Each block but the first reads only its own nodes and the block before it; only
the last block's tensors are read after the run (by later nodes or as graph outputs). The
first block may read anything before the run.

:func:`rescale` keeps everything before and after the run and puts ``new_count`` blocks in
its place: the first block as it was, then copies of the second block's wiring; the last
copy takes the names of the original last block, so nothing after the run changes, and the
graph inputs stay as they were (the same feeds run every size). Initializers that differ
from block to block are copied with fresh names for new blocks; shared ones stay shared.
This is pure protobuf work: no checker, no onnxruntime.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

#: longest block searched for, in nodes.
MAX_PERIOD = 32
#: fewest blocks a run must have to count as scalable.
MIN_BLOCKS = 4
_NO_INPUT = ("none",)


@dataclass(frozen=True)
class Run:
    """A run of alike blocks in a graph's node list.

    Attributes:
        start: index of the first node of the first block.
        period: nodes per block.
        count: blocks in the run.
    """

    start: int
    period: int
    count: int

    @property
    def end(self) -> int:
        """Index one past the run's last node."""
        return self.start + self.period * self.count


def _has_graph(node: Any) -> bool:
    return any(attr.HasField("g") or len(attr.graphs) for attr in node.attribute)


def _describe(graph: Any) -> list[tuple]:
    """One hashable description per node: what must be alike for two blocks to match."""
    producer: dict[str, tuple[int, int]] = {}
    inits = {t.name: (t.data_type, tuple(t.dims)) for t in graph.initializer}
    descs: list[tuple] = []
    for index, node in enumerate(graph.node):
        reads = []
        for name in node.input:
            if not name:
                reads.append(_NO_INPUT)
            elif name in producer:
                at, out = producer[name]
                reads.append(("rel", index - at, out))
            elif name in inits:
                reads.append(("init", *inits[name]))
            else:
                reads.append(("name", name))
        attrs = tuple(sorted((a.name, a.SerializeToString()) for a in node.attribute))
        unique = ("graph", index) if _has_graph(node) else ()
        descs.append((node.op_type, node.domain, attrs, len(node.output), tuple(reads), unique))
        for out_index, out in enumerate(node.output):
            if out:
                producer[out] = (index, out_index)
    return descs


def _wired_locally(descs: list[tuple], run: Run) -> bool:
    """Whether every block after the first reads only its own block and the one before."""
    for index in range(run.start + run.period, run.end):
        position = (index - run.start) % run.period
        for read in descs[index][4]:
            if read[0] == "rel" and read[1] > position + run.period:
                return False
    return True


def _read_only_at_the_end(graph: Any, run: Run) -> bool:
    """Whether tensors of blocks before the last are read only inside the run."""
    early = {out for node in graph.node[run.start:run.end - run.period] for out in node.output}
    outside = [name for node in list(graph.node[:run.start]) + list(graph.node[run.end:])
               for name in node.input]
    outside += [o.name for o in graph.output]
    return not early.intersection(outside)


def _initializers_consistent(graph: Any, run: Run) -> bool:
    """Whether each initializer read at a block position is either shared by every block
    or different in every block (a mix cannot be repeated faithfully)."""
    inits = {t.name for t in graph.initializer}
    for position in range(run.period):
        for slot in range(len(graph.node[run.start + position].input)):
            names = [graph.node[run.start + b * run.period + position].input[slot]
                     for b in range(run.count)]
            if names[0] in inits and len(set(names)) not in (1, len(names)):
                return False
    return True


def find_run(graph: Any) -> Run | None:
    """The longest run of alike blocks in ``graph`` (an ``onnx.GraphProto``): the most
    nodes covered, then the shortest block; None where no run of at least
    :data:`MIN_BLOCKS` blocks of at most :data:`MAX_PERIOD` nodes exists."""
    descs = _describe(graph)
    total = len(descs)
    best: Run | None = None
    for period in range(1, min(MAX_PERIOD, total // MIN_BLOCKS) + 1):
        index = 0
        while index + period < total:
            if descs[index] != descs[index + period]:
                index += 1
                continue
            first = index
            while index + period < total and descs[index] == descs[index + period]:
                index += 1
            count = (index + period - first) // period
            run = Run(first, period, count)
            if count >= MIN_BLOCKS and (best is None or run.period * run.count >
                                        best.period * best.count) and \
                    _wired_locally(descs, run) and _read_only_at_the_end(graph, run) and \
                    _initializers_consistent(graph, run):
                best = run
    return best


def _fresh(name: str, copy: int, taken: set[str]) -> str:
    """A new tensor or node name for ``name`` in copy number ``copy``, not in ``taken``."""
    candidate, extra = f"{name}__r{copy}", 0
    while candidate in taken:
        extra += 1
        candidate = f"{name}__r{copy}_{extra}"
    taken.add(candidate)
    return candidate


def rescale(model: Any, run: Run, new_count: int) -> Any:
    """``model`` (an ``onnx.ModelProto``, not modified) with ``new_count`` blocks in place of
    ``run``'s (see the module docstring); a new ModelProto.

    Raises:
        ValueError: ``new_count`` < 1, or ``run`` does not fit the model's graph.
    """
    import onnx

    graph = model.graph
    if new_count < 1 or run.end > len(graph.node) or run.count < 2:
        raise ValueError(f"cannot put {new_count} blocks in place of {run}")
    nodes = list(graph.node)
    block = [nodes[run.start + b * run.period: run.start + (b + 1) * run.period]
             for b in range(run.count)]
    descs = _describe(graph)
    taken = {out for n in nodes for out in n.output} | {n.name for n in nodes if n.name} | \
        {t.name for t in graph.initializer} | {i.name for i in graph.input}
    inits = {t.name: t for t in graph.initializer}
    new_inits: list[Any] = []
    placed: list[Any] = []  # the new nodes of the run, in order

    def names_of(copy: int, position: int) -> tuple[list[str], str]:
        """Output names and node name of node ``position`` in copy ``copy`` (1-based)."""
        if copy == new_count:
            source = block[-1][position]
        elif copy < run.count:
            source = block[copy - 1][position]
        else:
            template = block[1][position]
            outs = [_fresh(o, copy, taken) if o else "" for o in template.output]
            return outs, _fresh(template.name, copy, taken) if template.name else ""
        return list(source.output), source.name

    for copy in range(1, new_count + 1):
        template_block = block[0] if copy == 1 else block[1]
        for position, template in enumerate(template_block):
            node = onnx.NodeProto()
            node.CopyFrom(template)
            outs, name = names_of(copy, position)
            node.output[:] = outs
            node.name = name
            desc = descs[run.start + (0 if copy == 1 else run.period) + position]
            here = len(placed)
            for slot, read in enumerate(desc[4]):
                if read[0] == "rel" and here - read[1] >= 0:
                    node.input[slot] = placed[here - read[1]].output[read[2]]
                elif read[0] == "init" and copy > 1:
                    node.input[slot] = _block_initializer(
                        block, copy, position, slot, new_count, inits, new_inits, taken)
            placed.append(node)
    # a first copy's reads of the run's own earlier nodes resolve above; reads that point
    # before the run keep their names (the nodes before the run are unchanged)
    out = onnx.ModelProto()
    out.CopyFrom(model)
    del out.graph.node[:]
    out.graph.node.extend(nodes[:run.start] + placed + nodes[run.end:])
    _keep_used(out.graph, graph, new_inits)
    return out


def _block_initializer(block: list[list[Any]], copy: int, position: int, slot: int,
                       new_count: int, inits: dict[str, Any], new_inits: list[Any],
                       taken: set[str]) -> str:
    """The initializer name copy ``copy`` reads at ``(position, slot)``: the shared one,
    that block's own where the copy stands for an original block, else a fresh copy of the
    second block's."""
    names = [b[position].input[slot] for b in block]
    if len(set(names)) == 1:
        return names[0]
    if copy == new_count:
        return names[-1]
    if copy < len(block):
        return names[copy - 1]
    import onnx

    tensor = onnx.TensorProto()
    tensor.CopyFrom(inits[names[1]])
    tensor.name = _fresh(names[1], copy, taken)
    new_inits.append(tensor)
    return tensor.name


def _keep_used(graph: Any, original: Any, new_inits: list[Any]) -> None:
    """Give ``graph`` the initializers its nodes read (plus ``new_inits`` and those the
    original left unread), and drop value_info of tensors no node makes any more."""
    read = {name for node in graph.node for name in node.input} | \
        {o.name for o in graph.output}
    read_before = {name for node in original.node for name in node.input} | \
        {o.name for o in original.output}
    kept = [t for t in original.initializer if t.name in read or t.name not in read_before]
    del graph.initializer[:]
    graph.initializer.extend(kept + [t for t in new_inits if t.name in read])
    made = {out for node in graph.node for out in node.output} | \
        {i.name for i in graph.input} | {t.name for t in graph.initializer}
    infos = [v for v in original.value_info if v.name in made]
    del graph.value_info[:]
    graph.value_info.extend(infos)


def scaled_bytes(model_bytes: bytes, new_count: int) -> bytes | None:
    """The serialized model with ``new_count`` blocks in its longest run (:func:`find_run`,
    :func:`rescale`); None where it has no run."""
    import onnx

    model = onnx.load_model_from_string(model_bytes)
    run = find_run(model.graph)
    if run is None:
        return None
    return rescale(model, run, new_count).SerializeToString()
