"""Data-movement and shape ops: Reshape, Transpose, Flatten, Squeeze, Unsqueeze, Concat, Split,
Slice, Gather, Pad, Expand, Tile, Shape, Size, DepthToSpace, SpaceToDepth.

Each emitter picks the attribute-vs-input form of its declared opset (Squeeze/Unsqueeze/Split
axes move to inputs at 13, Slice at 10, Pad at 11) and keeps value-range facts (these ops move
values, they do not compute new ones).
"""

from __future__ import annotations

import math

import numpy as np

from generators.builder import GraphBuilder
from generators.ops.spec import OpSpec, axis
from generators.values import ALL, BOOL, FLOAT, INT64, NUMERIC, Value

INT64_MAX = 2**63 - 1


def reshape_target(b: GraphBuilder, shape: tuple[int, ...]) -> tuple[list[int], tuple[int, ...]]:
    """A Reshape ``shape`` input for a tensor of ``shape`` (may use 0 = copy and -1 = infer)
    and the resulting shape."""
    dims = list(shape)
    r = b.rng.random()
    if r < 0.25 and len(dims) >= 2:
        i = b.rng.randrange(len(dims) - 1)
        dims[i:i + 2] = [dims[i] * dims[i + 1]]
    elif r < 0.45 and len(dims) < 5:
        dims.insert(b.rng.randrange(len(dims) + 1), 1)
    elif r < 0.55:
        dims = [math.prod(dims)]
    elif r < 0.65 and len(dims) >= 1:
        dims = [dims[0], math.prod(dims[1:])]
    out = tuple(dims)
    spec = list(dims)
    if spec and b.rng.random() < 0.5:
        spec[b.rng.randrange(len(spec))] = -1
    copyable = [i for i in range(min(len(spec), len(shape))) if spec[i] == shape[i] != -1]
    if copyable and b.rng.random() < 0.4:
        spec[b.rng.choice(copyable)] = 0
    if spec.count(-1) == 1 and 0 in out:
        spec[spec.index(-1)] = out[spec.index(-1)]
    return spec, out


def _reshape(b: GraphBuilder, x: Value) -> Value:
    spec, out = reshape_target(b, x.shape)
    return b.op("Reshape", [x, b.ints(spec, "Reshape")], x.dtype, out, x.props)


def _transpose(b: GraphBuilder, x: Value) -> Value:
    if b.rng.random() < 0.1:
        perm, attrs = list(reversed(range(x.rank))), {}
    else:
        perm = list(range(x.rank))
        b.rng.shuffle(perm)
        attrs = {"perm": perm}
    out = tuple(x.shape[p] for p in perm)
    return b.op("Transpose", [x], x.dtype, out, x.props, **attrs)


def _flatten(b: GraphBuilder, x: Value) -> Value:
    k = b.rng.randrange(x.rank + 1)
    a = k - x.rank if k < x.rank and b.opset >= 11 and b.rng.random() < 0.5 else k
    out = (math.prod(x.shape[:k]), math.prod(x.shape[k:]))
    return b.op("Flatten", [x], x.dtype, out, x.props, axis=a)


def axes_operand(b: GraphBuilder, op: str, axes: list[int], input_since: int) -> dict:
    """``{"inputs": [name], "attrs": {}}`` or the attribute form, as the opset requires."""
    if b.opset >= input_since:
        return {"inputs": [b.ints(axes, op).name], "attrs": {}}
    return {"inputs": [], "attrs": {"axes": axes}}


def _squeeze(b: GraphBuilder, x: Value) -> Value | None:
    ones = [i for i, d in enumerate(x.shape) if d == 1]
    if not ones:
        return None
    chosen = b.rng.sample(ones, b.rng.randint(1, len(ones)))
    if b.opset < 11:
        chosen.sort()  # Squeeze-1 shape inference assumes sorted axes
    out = tuple(d for i, d in enumerate(x.shape) if i not in chosen)
    axes = [a - x.rank if b.opset >= 11 and b.rng.random() < 0.4 else a for a in chosen]
    form = axes_operand(b, "Squeeze", axes, 13)
    return b.op("Squeeze", [x, *form["inputs"]], x.dtype, out, x.props, **form["attrs"])


def unsqueeze(b: GraphBuilder, x: Value, axes: list[int]) -> Value:
    """Unsqueeze ``x`` at ``axes`` (output-rank positions, may be negative)."""
    r = x.rank + len(axes)
    norm = sorted(a % r for a in axes)
    out = list(x.shape)
    for a in norm:
        out.insert(a, 1)
    form = axes_operand(b, "Unsqueeze", axes, 13)
    return b.op("Unsqueeze", [x, *form["inputs"]], x.dtype, tuple(out), x.props,
                **form["attrs"])


def _unsqueeze(b: GraphBuilder, x: Value) -> Value:
    n = b.rng.randint(1, 2)
    r = x.rank + n
    axes = b.rng.sample(range(r), n)
    if b.opset >= 11:
        axes = [a - r if b.rng.random() < 0.4 else a for a in axes]
    return unsqueeze(b, x, axes)


def _concat(b: GraphBuilder, x: Value) -> Value:
    a = axis(b, x.rank)
    k = a % x.rank
    parts = [x]
    for _ in range(b.rng.randint(1, 2)):
        same = [v for v in b.pool if v.dtype == x.dtype and v.rank == x.rank
                and all(v.shape[i] == x.shape[i] for i in range(x.rank) if i != k)]
        if same and b.rng.random() < 0.5:
            parts.append(b.rng.choice(same))
        else:
            shape = list(x.shape)
            shape[k] = b.rng.randint(1, 3)
            parts.append(b.random_weight(tuple(shape), x.dtype, "Concat"))
    b.rng.shuffle(parts)
    out = list(x.shape)
    out[k] = sum(p.shape[k] for p in parts)
    props = frozenset.intersection(*(p.props for p in parts))
    return b.op("Concat", parts, x.dtype, tuple(out), props, axis=a)


def split_sizes(b: GraphBuilder, dim: int) -> list[int]:
    """Positive sizes summing to ``dim`` (at least one)."""
    cuts = sorted(b.rng.sample(range(1, dim), min(dim - 1, b.rng.randint(1, 2)))) if dim > 1 \
        else []
    edges = [0, *cuts, dim]
    return [edges[i + 1] - edges[i] for i in range(len(edges) - 1)]


def split(b: GraphBuilder, x: Value, a: int, sizes: list[int]) -> list[Value]:
    """Split ``x`` along axis ``a`` into ``sizes`` in the opset's form; returns the pooled
    outputs."""
    k = a % x.rank
    inputs = [x.name]
    attrs: dict = {}
    if b.opset >= 18 and len(set(sizes)) == 1 and b.rng.random() < 0.5:
        attrs["num_outputs"] = len(sizes)
    elif b.opset >= 13:
        inputs.append(b.ints(sizes, "Split").name)
    else:
        attrs["split"] = sizes
    names = b.node("Split", inputs, n_out=len(sizes), axis=a, **attrs)
    outs = []
    for name, s in zip(names, sizes, strict=True):
        shape = list(x.shape)
        shape[k] = s
        outs.append(b.add(Value(name, x.dtype, tuple(shape), x.props)))
    return outs


def _split(b: GraphBuilder, x: Value) -> Value | None:
    cands = [i for i, d in enumerate(x.shape) if d >= 2]
    if not cands:
        return None
    k = b.rng.choice(cands)
    a = k - x.rank if b.opset >= 11 and b.rng.random() < 0.4 else k
    return b.rng.choice(split(b, x, a, split_sizes(b, x.shape[k])))


def slice_dim(dim: int, start: int, end: int, step: int) -> int:
    """Length of ONNX Slice along one dim (same clamping as Python slices)."""
    return len(range(*slice(start, end, step).indices(dim)))


def slice_params(b: GraphBuilder, x: Value) -> tuple[list[int], list[int], list[int], list[int],
                                                     tuple[int, ...]]:
    """Random (starts, ends, axes, steps, out shape); starts/ends may be negative or beyond the
    tensor (clamped by the spec), steps negative from opset 10."""
    n = b.rng.randint(1, x.rank)
    axes = sorted(b.rng.sample(range(x.rank), n))
    starts, ends, steps = [], [], []
    out = list(x.shape)
    for a in axes:
        d = x.shape[a]
        step = -1 if b.opset >= 10 and b.rng.random() < 0.15 else 1
        if d == 0:  # an empty axis (a value of the pool may have one): every slice is empty
            s, e, step = 0, INT64_MAX, 1
        elif step == 1:
            s = b.rng.choice([0, 0, b.rng.randrange(d), -d, -1])
            e = b.rng.choice([d, INT64_MAX, d + 5, -1 if d > 1 else d, b.rng.randint(1, d)])
        else:
            s = b.rng.choice([-1, d - 1, INT64_MAX])
            e = b.rng.choice([-INT64_MAX, -d - 1, 0 if d > 1 else -d - 1])
        if slice_dim(d, s, e, step) == 0:
            s, e, step = 0, d, 1
        starts.append(s)
        ends.append(e)
        steps.append(step)
        out[a] = slice_dim(d, s, e, step)
    return starts, ends, axes, steps, tuple(out)


def _slice(b: GraphBuilder, x: Value) -> Value:
    starts, ends, axes, steps, out = slice_params(b, x)
    if b.opset >= 11 and b.rng.random() < 0.3:
        axes = [a - x.rank for a in axes]
    if b.opset < 10:
        return b.op("Slice", [x], x.dtype, out, x.props, starts=starts, ends=ends, axes=axes)
    inputs = [x, b.ints(starts, "Slice"), b.ints(ends, "Slice")]
    if any(s != 1 for s in steps) or b.rng.random() < 0.5:
        inputs += [b.ints(axes, "Slice"), b.ints(steps, "Slice")]
    elif axes != list(range(len(axes))) or b.rng.random() < 0.5:
        inputs.append(b.ints(axes, "Slice"))
    return b.op("Slice", inputs, x.dtype, out, x.props)


def _gather(b: GraphBuilder, x: Value) -> Value:
    a = axis(b, x.rank)
    k = a % x.rank
    d = x.shape[k]
    ishape = b.rng.choice([(), (b.rng.randint(1, 3),), (2, 2)])
    lo = -d if b.opset >= 11 else 0
    idx = b.nprng.integers(lo, d, size=ishape).astype(np.int64)
    out = x.shape[:k] + tuple(ishape) + x.shape[k + 1:]
    return b.op("Gather", [x, b.const(idx, "Gather")], x.dtype, out, x.props, axis=a)


def _pad(b: GraphBuilder, x: Value) -> Value:
    pads = [b.rng.choice([0, 0, 1, 2]) for _ in range(2 * x.rank)]
    mode = b.rng.choice(["constant", "constant", "edge", "reflect"])
    if mode == "reflect" and any(p >= d for p, d in zip(pads, x.shape * 2, strict=True)):
        mode = "constant"
    out = tuple(d + pads[i] + pads[i + x.rank] for i, d in enumerate(x.shape))
    props = x.props if mode != "constant" or "nonneg" in x.props else frozenset()
    if b.opset < 11:
        return b.op("Pad", [x], x.dtype, out, props, pads=pads, mode=mode)
    inputs = [x, b.ints(pads, "Pad")]
    if mode == "constant" and b.rng.random() < 0.3:
        inputs.append(b.scalar(0, x.dtype, "Pad"))
    return b.op("Pad", inputs, x.dtype, out, props, mode=mode)


def _expand(b: GraphBuilder, x: Value) -> Value:
    shape = [b.rng.randint(2, 3) if d == 1 and b.rng.random() < 0.5 else
             (1 if b.rng.random() < 0.2 else d) for d in x.shape]
    if b.rng.random() < 0.3:
        shape.insert(0, b.rng.randint(1, 2))
    out = tuple(max(s, d) for s, d in zip(shape, (1,) * (len(shape) - x.rank) + x.shape,
                                          strict=True))
    return b.op("Expand", [x, b.ints(shape, "Expand")], x.dtype, out, x.props)


def _tile(b: GraphBuilder, x: Value) -> Value:
    reps = [b.rng.choice([1, 1, 2]) for _ in x.shape]
    out = tuple(d * r for d, r in zip(x.shape, reps, strict=True))
    return b.op("Tile", [x, b.ints(reps, "Tile")], x.dtype, out, x.props)


def _shape(b: GraphBuilder, x: Value) -> Value:
    attrs: dict = {}
    lo, hi = 0, x.rank
    if b.opset >= 15 and b.rng.random() < 0.3:
        lo = b.rng.randrange(x.rank)
        attrs["start"] = lo - x.rank if b.rng.random() < 0.5 else lo
    return b.op("Shape", [x], INT64, (hi - lo,), ("nonneg",), **attrs)


def _size(b: GraphBuilder, x: Value) -> Value:
    return b.op("Size", [x], INT64, (), ("nonneg",))


def _depth_to_space(b: GraphBuilder, x: Value) -> Value | None:
    if x.shape[1] % 4:
        return None
    n, c, h, w = x.shape
    attrs = {"blocksize": 2}
    if b.opset >= 11:
        attrs["mode"] = b.rng.choice(["DCR", "CRD"])
    return b.op("DepthToSpace", [x], x.dtype, (n, c // 4, h * 2, w * 2), x.props, **attrs)


def _space_to_depth(b: GraphBuilder, x: Value) -> Value | None:
    n, c, h, w = x.shape
    if h % 2 or w % 2:
        return None
    return b.op("SpaceToDepth", [x], x.dtype, (n, c * 4, h // 2, w // 2), x.props, blocksize=2)


_MOVE = frozenset(ALL)
_F = frozenset({FLOAT})


def specs() -> list[OpSpec]:
    """The shape-op catalogue."""
    return [
        OpSpec("Reshape", _reshape, _MOVE, (0, 4), since=5, weight=1.5, v1=True),
        OpSpec("Transpose", _transpose, _MOVE, (1, 4), weight=1.2, v1=True),
        OpSpec("Flatten", _flatten, frozenset({FLOAT}), (1, 4), since=7, v1=True),
        OpSpec("Flatten", _flatten, _MOVE, (1, 4), since=11),
        OpSpec("Squeeze", _squeeze, _MOVE, (1, 4), v1=True),
        OpSpec("Unsqueeze", _unsqueeze, _MOVE, (0, 3), v1=True),
        OpSpec("Concat", _concat, _MOVE, (1, 4), since=4, weight=1.2, v1=True),
        OpSpec("Split", _split, _MOVE - {BOOL}, (1, 4), since=2, v1=True),
        OpSpec("Slice", _slice, _MOVE, (1, 4), weight=1.2, v1=True),
        OpSpec("Gather", _gather, _MOVE, (1, 4), v1=True),
        OpSpec("Pad", _pad, _F, (1, 4), since=2, v1=True),
        OpSpec("Expand", _expand, NUMERIC, (1, 4), since=8),
        OpSpec("Tile", _tile, NUMERIC, (1, 4), since=6),
        OpSpec("Shape", _shape, _MOVE, (1, 4), weight=0.6, v1=True),
        OpSpec("Size", _size, _MOVE, (1, 4), weight=0.3),
        OpSpec("DepthToSpace", _depth_to_space, _F, (4, 4), since=1, weight=0.5),
        OpSpec("SpaceToDepth", _space_to_depth, _F, (4, 4), since=1, weight=0.5),
    ]
