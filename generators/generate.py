"""Composition of a random model from the catalogue and the motif library.

The loop follows NNSmith's forward insertion (Liu et al., ASPLOS 2023) without a solver: keep a
pool of typed values (graph inputs first); at each step pick a value, pick an op spec (or a
motif) that fits its dtype, rank and the opset, and append it; the leaves become graph
outputs. Everything is drawn from one ``random.Random`` seeded with the seed and a CRC-32
of ``"<generator>:<pass hint>"``, so a model is a pure function of those three.

Two choices are read from the seed alone rather than from that stream (:func:`stratum`):
which motif of the pool a model draws first (the pool's motifs in rotation over consecutive
seeds, so that every motif is drawn equally often), and which step of the walk of its
schema plan that draw takes (:func:`walk_row`: consecutive draws of a motif walk its plan,
so that ``n`` varied draws take ``n`` distinct steps, each a plan row, aimed at one anchor
op for a motif of variants: :mod:`generators.schema.walk`). The stream is consumed as
before, so the rest of a model is drawn as it was.
"""

from __future__ import annotations

import math
import random
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache, partial
from typing import Any

from generators import ops
from generators.builder import GraphBuilder, store_typed
from generators.hints import GenerationHints
from generators.interfaces import apply_interfaces
from generators.motifs import HINTED_ONLY_MOTIFS, MOTIFS, Motif
from generators.names import Namer, restyle
from generators.pooled_random import PooledRandom
from generators.recipe import RECIPES, Recipe
from generators.schema.apply import Mark, emit_for_row, row_anchors, row_misfits, vary
from generators.schema.plan import motif_plan
from generators.schema.rows import Row
from generators.schema.walk import Step, aimed_notes, walk_steps
from generators.values import BOOL, FLOAT, FLOAT16, INT32, INT64, Value
from generators.versions import (
    MAX_OPSET,
    MIN_OPSET,
)

_DTYPE = {"float": FLOAT, "float16": FLOAT16, "int64": INT64, "int32": INT32, "bool": BOOL}
#: Largest tensor (elements) a step may consume; keeps tensors and run time small.
#: share of generated models whose initializers and Constant tensors sit in the typed
#: fields (``float_data``, ``int64_data``, ...) rather than ``raw_data``: optimizers parse
#: both (onnxoptimizer's ParseTensorData takes a branch for each).
TYPED_STORAGE_SHARE = 1 / 3
#: salt of the seed that decides the storage (the model's own random stream stays as is).
TYPED_STORAGE_SALT = 0x7E9D


def stored_tensors(model: Any) -> list[Any]:
    """The TensorProtos ``model`` stores: initializers and Constant ``value`` attributes of
    every graph."""
    found, graphs = [], [model.graph]
    while graphs:
        graph = graphs.pop()
        found.extend(graph.initializer)
        for node in graph.node:
            for a in node.attribute:
                graphs.extend([a.g] if a.HasField("g") else [])
                graphs.extend(a.graphs)
                if node.op_type == "Constant" and a.name == "value":
                    found.append(a.t)
    return found


MAX_OPERAND = 1024
#: Attempts per step before the step is skipped.
ATTEMPTS = 6


@dataclass
class GeneratedModel:
    """A generated model and how it was made.

    Attributes:
        model: the ``onnx.ModelProto``.
        seed: the seed it was generated from.
        motifs: motif names applied, in order (repeats possible).
        opset: default-domain opset declared.
        generator: recipe name (``"v1"``, ``"v2"``).
        ir_version: IR version declared (matches ``opset``).
        name_style: tensor-name style used.
        input_shapes: sizes of symbolic dims per graph input (``None`` if all static).
        spans: ``(motif, first node index, end index)`` of each motif draw in the main
            graph's node list (the anchor nodes :mod:`generators.schema.measure` reads).
        varied: one ``{"motif", "row", "notes"}`` per draw that took a schema plan row:
            the row's index and what the draw could not take, with reasons.
        interfaces: interface forms applied (:mod:`generators.interfaces`).
    """

    model: Any
    seed: int
    motifs: list[str]
    opset: int
    generator: str
    ir_version: int = 0
    name_style: str = ""
    input_shapes: dict[str, list[int]] | None = field(default=None)
    spans: list[tuple[str, int, int]] = field(default_factory=list)
    varied: list[dict[str, Any]] = field(default_factory=list)
    interfaces: list[str] = field(default_factory=list)


@lru_cache(maxsize=1024)
def _hint_key(generator: str, passes: tuple[str, ...]) -> int:
    """A 32-bit key of (generator, pass hint) that seeds the model's random source."""
    return zlib.crc32(f"{generator}:{','.join(passes)}".encode())


@lru_cache(maxsize=1024)
def _motif_pool(recipe: Recipe, passes: tuple[str, ...],
                opset: int | None = None) -> tuple[tuple[Motif, ...], bool]:
    """Motifs to draw from, and whether they are a pass hint's (then used more often).
    Motifs of ``HINTED_ONLY`` families (:mod:`generators.motifs`) join only a hint's pool;
    ``opset`` (an opset the hint pins) keeps the motifs that exist at it."""
    allowed = tuple(m for m in MOTIFS.values() if (m.v1 or not recipe.motifs_v1_only)
                    and (opset is None or m.since <= opset <= m.until))
    if passes:
        wanted = set(passes)
        hinted = tuple(m for m in allowed if wanted.intersection(m.passes))
        if hinted:
            return hinted, True
    return tuple(m for m in allowed if m.name not in HINTED_ONLY_MOTIFS), False


def _first_input_shape(rng: random.Random) -> tuple[int, ...]:
    r = rng.random()
    if r < 0.45:
        return (rng.randint(1, 2), rng.randint(1, 4), rng.randint(3, 6), rng.randint(3, 6))
    if r < 0.75:
        return (rng.randint(1, 4), rng.randint(2, 6))
    if r < 0.9:
        return (rng.randint(1, 2), rng.randint(2, 4), rng.randint(2, 5))
    return (rng.randint(2, 6),)


def _graph_inputs(b: GraphBuilder, recipe: Recipe) -> None:
    n = 1 + (b.rng.random() < 0.5) * b.rng.randint(1, recipe.max_inputs - 1) \
        if recipe.max_inputs > 1 else 1
    first = _first_input_shape(b.rng)
    for i in range(n):
        dtype = FLOAT if i == 0 else _DTYPE[b.rng.choice(recipe.input_dtypes)]
        shape = first if i == 0 or b.rng.random() < 0.5 else _first_input_shape(b.rng)
        symbolic = None
        if shape[0] == 1 and b.rng.random() < recipe.dynamic_dims:
            symbolic = {0: b.rng.choice(["batch", "N", "batch_size", "unk__0"])}
        b.graph_input(dtype, shape, symbolic)


def _record_shapes(b: GraphBuilder, shapes: dict[str, list[int]]) -> None:
    """Record in ``shapes`` the concrete shape of every graph input declared with a symbolic
    or unknown dim, whether :func:`_graph_inputs` or a motif made it
    (``GeneratedModel.input_shapes``): such a dim is 1 at run time
    (:meth:`GraphBuilder.graph_input`), the others as declared."""
    for vi in b.inputs:
        dims = vi.type.tensor_type.shape.dim
        if any(not d.HasField("dim_value") for d in dims):
            shapes.setdefault(vi.name, [d.dim_value if d.HasField("dim_value") else 1
                                        for d in dims])


def _pick_value(b: GraphBuilder, pred: Any = None) -> Value | None:
    cands = [v for v in b.pool if v.size <= MAX_OPERAND and (pred is None or pred(v))]
    if not cands:
        return None
    if b.rng.random() < 0.6:
        return cands[-1 - b.rng.randrange(min(3, len(cands)))]
    return b.rng.choice(cands)


def _step_op(b: GraphBuilder, v1: bool) -> None:
    for _ in range(ATTEMPTS):
        x = _pick_value(b)
        if x is None:
            return
        specs, cum = ops.fitting(b.opset, x.dtype, x.rank, v1)
        if not specs:
            continue
        if ops.choose(b.rng, specs, cum).emit(b, x) is not None:
            return


def _step_motif(b: GraphBuilder, motif: Motif, row: Taken | None = None,
                spans: list[tuple[str, int, int]] | None = None,
                varied: list[dict[str, Any]] | None = None) -> bool:
    """Append one draw of ``motif``; with ``row`` (walk step, plan row) the draw takes that
    row of the motif's schema plan, aimed at the step's anchor op
    (:func:`generators.schema.apply.emit_for_row`, :func:`generators.schema.apply.vary`),
    and what it could not take is recorded in ``varied`` (``{"motif", "row": the row's
    index, "aim", "notes"}``); ``spans`` gets ``(motif, first node, end)``."""
    if motif.emit is None:
        return False
    for _ in range(ATTEMPTS):
        x = _pick_value(b, lambda v: motif.fits(v.dtype, v.rank))
        if x is None:
            x = _adapt(b, motif)
            if x is None:  # the float value drawn was too small: the next attempt draws again
                continue
        mark = Mark.of(b)
        plan = motif_plan(motif.name) if row is not None else None
        result = emit_for_row(b, motif.emit, x, row_anchors(plan, row[1]), row[0].aim,
                              partial(row_misfits, plan=plan, row=row[1]),
                              lambda: _pick_value(b, lambda v: motif.fits(v.dtype, v.rank)),
                              {op: plan.op_row(row[1], op) for op in plan.spaces}) \
            if plan is not None and row is not None else motif.emit(b, x)
        if result is not None:
            if row is not None:
                notes = aimed_notes(vary(b, mark, plan, row[1], result, row[0].aim), row[0].aim) \
                    if plan is not None else []
                if varied is not None:
                    varied.append({"motif": motif.name, "row": row[0].row,
                                   "aim": row[0].aim, "notes": notes})
            if spans is not None:
                spans.append((motif.name, mark.nodes, len(b.nodes)))
            b.motifs.append(motif.name)
            return True
    return False


@dataclass(frozen=True)
class Stratum:
    """Where a seed's first motif draw falls in the walk of its motif's schema plan.

    Attributes:
        index: the motif's index in the draw's motif pool.
        count: how many first draws of that motif of the same seed parity come before it,
            counting seeds upward from 0.
        parity: the seed's lowest bit.
    """

    index: int
    count: int
    parity: int


def stratum(seed: int, size: int) -> Stratum:
    """The :class:`Stratum` of ``seed`` for a motif pool of ``size`` motifs.

    Even and odd seeds form two series (a campaign's case stream decides by the seed's
    lowest bit whether a case is mutated, so neither motif nor row may follow that bit);
    within a series the seeds take the pool's motifs in rotation, the odd series half a
    rotation on: seed ``2u + p`` draws motif ``(u + p * (size // 2)) % size``, its
    ``count``-th draw of that series. Consecutive seeds thus draw every motif equally often,
    and random seeds draw each motif independently of their parity.

    Raises:
        ValueError: ``size < 1``.
    """
    if size < 1:
        raise ValueError("an empty motif pool")
    p = seed & 1
    t = (seed >> 1) + p * (size // 2)
    return Stratum(t % size, t // size, p)


def walk_row(share: float, s: Stratum, length: int) -> int | None:
    """The step of its plan's walk (an index below ``length``, the walk's steps:
    :func:`generators.schema.walk.walk_steps`; a plan row each for a motif that makes all
    its anchors in every draw) the draw at stratum ``s`` takes, or None.

    Of the draws of one motif in one series, those whose count ``k`` moves
    ``floor(k * share)`` up take a step (a share ``share`` of them, evenly spread: every
    second one at 0.5); the ``j``-th of them in series ``p`` is draw ``g = 2j + p`` (the
    two series interleave), and draw ``g`` takes step ``(g + g // length) % length``: each
    lap of the walk is its steps in order, shifted by the lap's number, so that over laps
    each step falls to even and odd seeds in turn. Within a lap the draws take distinct
    steps, so ``n <= length`` consecutive varied draws of a motif (consecutive seeds) take
    ``n`` distinct steps, the walk's first steps (which cover the most pairs) first.
    """
    if length <= 0 or share <= 0:
        return None
    j, nxt = math.floor(s.count * share), math.floor((s.count + 1) * share)
    if nxt == j:
        return None
    g = 2 * j + s.parity
    return (g + g // length) % length


#: salt of the seed that decides which draws of a list of motifs given by name take a plan
#: row (the model's own random stream stays as it is).
SCHEMA_SALT = 0x5C4E
#: a draw's place in its plan walk: a :class:`Stratum` (a seed's first, rotated draw),
#: NAMED (a draw of a list of motifs given by name) or None (a later draw: no row).
Place = Stratum | str | None
NAMED = "named"


def _row_index(recipe: Recipe, place: Place, length: int, named: random.Random,
               seed: int) -> int | None:
    """The step of a walk of ``length`` steps the draw at ``place`` takes (None: none).

    A rotated draw takes :func:`walk_row`. A draw of a motif given by name (tests and
    strategies pin those seeds) keeps the rule it had: a share ``schema_share`` of them,
    drawn from ``named`` (a random source of the salted seed), take step ``seed % length``,
    so that consecutive seeds walk the plan too."""
    if isinstance(place, Stratum):
        return walk_row(recipe.schema_share, place, length)
    if place == NAMED and named.random() < recipe.schema_share:
        return seed % length
    return None


#: what a row-taking draw takes: its walk step and the step's plan row.
Taken = tuple[Step, Row]


def _plan_rows(recipe: Recipe, chosen: list[Motif], places: list[Place],
               seed: int) -> list[Taken | None]:
    """For each chosen motif, the walk step of its schema plan its draw takes, with the
    step's row, or None (:func:`_row_index`; a motif without anchors takes none). Steps
    are read from the seed alone, not from the model's random stream, so a draw that
    takes no row is the draw it was."""
    named = random.Random(seed ^ SCHEMA_SALT)
    out: list[Taken | None] = []
    for m, place in zip(chosen, places, strict=True):
        plan = motif_plan(m.name) if m.anchors and m.emit is not None else None
        steps = walk_steps(m.name) if plan is not None else ()
        i = _row_index(recipe, place, len(steps), named, seed) \
            if steps and recipe.schema_share else None
        out.append(None if i is None or plan is None else (steps[i], plan.rows[steps[i].row]))
    return out


def walk_seeds(motif: str, generator: str = "v2",
               passes: Sequence[str] | GenerationHints | None = None) -> dict[int, int]:
    """Walk step index -> the smallest seed at which :func:`generate` with ``generator``
    and ``passes`` draws ``motif`` first and that draw takes the step (:func:`walk_row`,
    :func:`generators.schema.walk.walk_steps`): the seeds that walk the motif's plan
    once. Empty where the motif is not in the hint's pool or has no plan; generating the
    seeds is what ``coverage --schema`` reports as the walked share."""
    recipe = RECIPES[generator]
    hints = GenerationHints.of(passes)
    pool, _ = _motif_pool(recipe, hints.passes, hints.opset)
    names = [m.name for m in pool]
    plan = motif_plan(motif) if motif in names else None
    steps = walk_steps(motif) if plan is not None else ()
    if not steps or recipe.schema_share <= 0:
        return {}
    a, size, length = names.index(motif), len(names), len(steps)
    # a step is reached in the first two laps: 2 * length steps of each series, each step
    # at most ceil(1 / share) counts, each count ``size`` seeds of its series apart
    bound = 2 * size * (math.ceil(2 * (length + 1) / recipe.schema_share) + 2)
    out: dict[int, int] = {}
    for seed in range(bound):
        s = stratum(seed, size)
        if s.index != a:
            continue
        r = walk_row(recipe.schema_share, s, length)
        if r is not None and r not in out:
            out[r] = seed
            if len(out) == length:
                break
    return dict(sorted(out.items()))


def _row_opsets(recipe: Recipe, chosen: list[Motif],
                rows: list[Taken | None], lo: int,
                hi: int) -> tuple[int, int]:
    """``lo..hi`` (the opsets every chosen motif exists at) narrowed to the opset interval
    the first plan row asks for. Where they do not meet, the row's interval within the
    recipe's and its own motif's opsets wins: the motifs that do not exist there are left
    out of the model (a model's second motif, which takes no row), so that the row's draw
    is made at an opset of its row."""
    for m, r in zip(chosen, rows, strict=True):
        if r is None:
            continue
        plan = motif_plan(m.name)
        if plan is None:
            continue
        a, z = plan.interval(r[1])
        if max(lo, a) <= min(hi, z):
            return max(lo, a), min(hi, z)
        own = max(recipe.opsets[0], m.since, a), min(recipe.opsets[1], m.until, z)
        if own[0] <= own[1]:
            return own
    return lo, hi


def _adapt(b: GraphBuilder, motif: Motif) -> Value | None:
    """A float value of a rank the motif accepts, made from a pooled float value by Reshape."""
    src = _pick_value(b, lambda v: v.dtype == FLOAT)
    if src is None:
        return None
    lo, hi = motif.ranks
    rank = b.rng.randint(lo, hi)
    if src.size < 2 and rank > 0:
        return None
    if rank == 0 and src.size != 1:
        rank = 1
    shape = {0: (), 1: (src.size,), 2: (1, src.size), 3: (1, 1, src.size)}.get(rank)
    if rank >= 4:
        shape = (1, 1, src.size // 3, 3) if src.size % 3 == 0 else (1, 1, 1, src.size)
    return b.op("Reshape", [src, b.ints(list(shape), "Reshape")], FLOAT, shape, src.props)


def generate(seed: int, generator: str = "v2",
             passes: Sequence[str] | GenerationHints | None = None,
             nodes: tuple[int, int] | None = None,
             motifs: list[str] | None = None, opset: int | None = None,
             interfaces: list[str] | None = None) -> GeneratedModel:
    """Generate one model.

    Args:
        seed: any int; with ``generator`` and ``passes`` it determines the model.
        generator: a key of :data:`generators.recipe.RECIPES`.
        passes: target pass list, or :class:`~generators.hints.GenerationHints`; biases
            motif choice toward motifs of these passes; the hints' ``opset`` declares that
            opset where ``opset`` is None, drawing only motifs that exist at it; their
            ``steps`` draws that many random ops where ``nodes`` is None.
        nodes: override the recipe's (min, max) number of steps.
        motifs: apply exactly these motifs (by name) instead of drawing them (which of
            their draws take a plan row: :func:`_row_index`).
        opset: declare this default-domain opset (7..21) instead of drawing one; motifs that
            do not exist at it are left out.
        interfaces: apply exactly these interface forms (by name, where the model has a
            place for them) instead of drawing (:mod:`generators.interfaces`).

    Returns:
        A :class:`GeneratedModel`; its model passes onnx.checker full_check and runs in
        onnxruntime on inputs from :mod:`generators.inputs` (rate measured by
        ``benchmarks/validity.py``).

    Raises:
        KeyError: unknown generator, motif or interface form name.
        ValueError: ``opset`` outside 7..21.
    """
    recipe = RECIPES[generator]
    if opset is not None and not MIN_OPSET <= opset <= MAX_OPSET:
        raise ValueError(f"opset {opset} outside {MIN_OPSET}..{MAX_OPSET}")
    hints = GenerationHints.of(passes)
    rng = random.Random((_hint_key(generator, hints.key()) << 64) ^ (seed % 2**64))
    pinned = hints.opset if opset is None else None
    if pinned is not None and not MIN_OPSET <= pinned <= MAX_OPSET:
        raise ValueError(f"opset {pinned} outside {MIN_OPSET}..{MAX_OPSET}")
    pool, hinted = _motif_pool(recipe, hints.passes, pinned)
    pool = tuple(m for m in pool if not hints.avoids("motif", m.name)) or pool
    opset = pinned if pinned is not None else opset
    places: list[Place]
    if motifs is not None:
        chosen = [MOTIFS[m] for m in motifs]
        places = [NAMED] * len(chosen)
    else:
        k = rng.randint(1, 2) if hinted else (rng.random() < recipe.motif_rate * 2) * \
            rng.randint(1, 2)
        chosen = [rng.choice(pool) for _ in range(k)]
        places = [None] * k
        if chosen:  # the first draw rotates over the pool by seed (the stream stays as is)
            first = stratum(seed, len(pool))
            places[0] = first
            chosen[0] = pool[first.index]
    rows = _plan_rows(recipe, chosen, places, seed)
    if opset is None:
        lo = max([recipe.opsets[0], *(m.since for m in chosen)])
        hi = min([recipe.opsets[1], *(m.until for m in chosen)])
        lo, hi = _row_opsets(recipe, chosen, rows, lo, hi)
        opset = rng.randint(lo, hi) if lo <= hi else recipe.opsets[1]
    kept = [(m, r) for m, r in zip(chosen, rows, strict=True) if m.since <= opset <= m.until]
    chosen = [m for m, _ in kept]
    style = rng.choice(recipe.name_styles)
    style = restyle(style, seed) if recipe.interfaces else style
    b = GraphBuilder(rng, PooledRandom(rng), opset,
                     Namer(style, rng), weights="initializer", sparse=hints.sparse)
    if hints.avoids("ir", 3):
        b.min_ir = 4
    if recipe.name == "v2" and rng.random() < 0.15:
        b.weights = "input"
    for m in chosen:
        if m.setup is not None:
            m.setup(b)
            b.motifs.append(m.name)
    shapes: dict[str, list[int]] = {}
    _graph_inputs(b, recipe)
    lo_n, hi_n = nodes or hints.steps or recipe.nodes
    steps = rng.randint(lo_n, hi_n)
    emitters = [(m, r) for m, r in kept if m.emit is not None]
    slots = sorted(rng.sample(range(steps + len(emitters)), len(emitters)))
    queue = list(emitters)
    spans: list[tuple[str, int, int]] = []
    varied: list[dict[str, Any]] = []
    for i in range(steps + len(emitters)):
        if queue and slots and i == slots[0]:
            slots.pop(0)
            m, r = queue.pop(0)
            _step_motif(b, m, r, spans, varied)
        else:
            _step_op(b, recipe.v1_ops)
    for m in chosen:
        if m.finish is not None:
            m.finish(b)
            b.motifs.append(m.name)
    leaves = b.leaves() or [v for v in b.pool if v.name not in b.input_names][-1:]
    if not leaves:
        leaves = [b.op("Identity", [b.pool[0]], b.pool[0].dtype, b.pool[0].shape)]
    for v in leaves:
        b.graph_output(v)
    if rng.random() < recipe.extra_outputs:
        inner = [v for v in b.pool if v.name not in b.input_names
                 and v.name not in b.output_names]
        if inner:
            b.graph_output(rng.choice(inner))
    if rng.random() < recipe.annotate:
        b.annotate(1.0 if rng.random() < 0.7 else 0.5)
    _record_shapes(b, shapes)
    # a motif's Constant anchors stay Constants whatever an exporter does with the others
    held = {i for motif, start, end in spans if "Constant" in MOTIFS[motif].anchors
            for i in range(start, end) if b.nodes[i].op_type == "Constant"}
    model, forms = apply_interfaces(b, seed, recipe.interfaces, style, shapes, interfaces,
                                    spans, avoid=hints.avoid, held=held)
    if random.Random(seed ^ TYPED_STORAGE_SALT).random() < TYPED_STORAGE_SHARE:
        for tensor in stored_tensors(model):
            store_typed(tensor)
    return GeneratedModel(model, seed, b.motifs, opset, generator, model.ir_version,
                          style, shapes or None, spans, varied, forms)
