"""A fused step of the typed GGNN for the CPU, for speed: the same function as
:meth:`programl.models.ggnn.TypedGGNNConv.step`, fewer operations, not the same rounding.

Opt-in (``TypedGGNNConv(fused=True)``, ``DataflowGGNN(fused=True)``); off by default, because its numbers differ from
the faithful path's in the last bits (the sums run in another order) and a run with it does not reproduce a run
without it bit for bit. What it changes, per step of ``h' = GRU(mean_v sum_{u->v} (W_t h_u + b_t) * g_p, h)``:

* the message map runs per edge type on the edges' source states (one ``index_select`` of the states, then one
  ``addmm`` per type over that type's edges: E' rows, ~3.6 N for ProGraML graphs) instead of on every node for all
  six types (6 N rows of a (N, 6D) table that the edges then read);
* the mean's ``1 / in-degree`` is folded into the per-edge gates once per forward pass;
* the edges are ordered by (type, target), so the sum over a target's edges is six sequential ``index_add_`` sweeps;
* the GRU's elementwise work is a few whole-tensor operations (the reset and update gates in one ``sigmoid``) and
  the backward pass is written out (:class:`_FusedStep`): no zero-filled (N, 6D) gradient table, no ``cat`` of
  the GRU gates' gradients, and the weights' gradients of one step computed with one ``mm`` each;
* with 2 to 4 torch threads, the batch's nodes are cut at graph boundaries (no edge crosses a cut) into as many
  parts, of about equal size, and every step runs each part on its own thread with one intra-op thread each
  (one part on the calling thread, the others on a small pool), forward and backward: the parts share nothing
  but the weights, whose gradients are added, so the threads never wait on each other inside a step, where
  2-thread intra-op parallelism meets at a barrier in every one of a step's ~40 operations. That wins on a loaded
  machine (a barrier waits for a parked thread); on an idle one two intra-op threads are faster
  (``docs/results.md`` §4, "Training at the hardware's limit").

The GRU equations are PyTorch's ``GRUCell``: ``r = s(W_ir a + b_ir + W_hr h + b_hr)``, ``z = s(...)``,
``n = tanh(W_in a + b_in + r * (W_hn h + b_hn))``, ``h' = (1 - z) n + z h``. Only the single-GRU layer without
dropout is fused; :meth:`TypedGGNNConv.forward` uses the faithful path otherwise, and under autocast.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import NamedTuple

import torch
from torch import Tensor

__all__ = ["FusedEdges", "FusedPlan", "fused_plan", "fused_steps"]

#: Threads up to which the nodes are cut into one part per thread (more threads: one part, intra-op threads).
MAX_PARTS = 4


class FusedEdges(NamedTuple):
    """One part's typed edges, ordered by (type, target), in the part's own node numbering.

    Attributes:
        source: (E_p,) long source node of each typed edge.
        target: (E_p,) long target node.
        bounds: ``num_types + 1`` offsets: type t's edges are ``bounds[t]:bounds[t + 1]``.
        nodes: the part's nodes, a range of the batch's.
        edges: the part's edges, a range of the plan's edge order.
    """

    source: Tensor
    target: Tensor
    bounds: list[int]
    nodes: slice
    edges: slice


class FusedPlan(NamedTuple):
    """The parts of a batch for :func:`fused_steps`; ``order`` (E',) is the typed edge (in edge order) at each
    position of the plan's edge order (part, then type, then target)."""

    parts: list[FusedEdges]
    order: Tensor


def _cuts(source: Tensor, target: Tensor, num_nodes: int, parts: int) -> list[int]:
    """Node indices near ``k * num_nodes / parts`` that no edge crosses (graph boundaries of a batch)."""
    if parts <= 1 or num_nodes < 2 * parts:
        return []
    low, high = torch.minimum(source, target), torch.maximum(source, target)
    cover = torch.zeros(num_nodes + 1, dtype=torch.long, device=source.device)
    cover.index_add_(0, low, torch.ones_like(low))
    cover.index_add_(0, high, -torch.ones_like(high))
    free = torch.nonzero(torch.cumsum(cover, 0)[:-1] == 0).flatten() + 1  # a cut before node i: no edge spans it
    free = free[free < num_nodes]
    if not free.numel():
        return []
    cuts = []
    for k in range(1, parts):
        cut = int(free[torch.argmin((free - k * num_nodes // parts).abs())])
        if (not cuts or cut > cuts[-1]) and 0 < cut < num_nodes:
            cuts.append(cut)
    return cuts


def fused_plan(
    source: Tensor, target: Tensor, edge_type: Tensor, num_types: int, num_nodes: int, parts: int = 1
) -> FusedPlan:
    """Cut the nodes into up to ``parts`` ranges at graph boundaries and order each range's typed edges (given in
    edge order) by (type, target)."""
    bounds_nodes = [0, *_cuts(source, target, num_nodes, parts), num_nodes]
    part = torch.bucketize(
        target, torch.tensor(bounds_nodes[1:-1], dtype=target.dtype, device=target.device), right=True
    )
    span = max(num_nodes, 1)
    key = (part * num_types + edge_type) * span + target
    order = torch.sort(key, stable=True).indices
    source, target, edge_type, part = source[order], target[order], edge_type[order], part[order]
    counts = torch.bincount(part * num_types + edge_type, minlength=(len(bounds_nodes) - 1) * num_types).tolist()
    result, offset = [], 0
    for p in range(len(bounds_nodes) - 1):
        start, stop = bounds_nodes[p], bounds_nodes[p + 1]
        bounds = [0]
        for c in counts[p * num_types : (p + 1) * num_types]:
            bounds.append(bounds[-1] + int(c))
        edges = slice(offset, offset + bounds[-1])
        result.append(FusedEdges(source[edges] - start, target[edges] - start, bounds, slice(start, stop), edges))
        offset += bounds[-1]
    return FusedPlan(result, order)


_POOL: ThreadPoolExecutor | None = None
_POOL_LOCK = threading.Lock()


def _pool() -> ThreadPoolExecutor:
    global _POOL
    with _POOL_LOCK:
        if _POOL is None:
            _POOL = ThreadPoolExecutor(
                MAX_PARTS - 1, thread_name_prefix="fused-ggnn", initializer=torch.set_num_threads, initargs=(1,)
            )
        return _POOL


def _no_grad(fn: Callable, *args):
    with torch.no_grad():
        return fn(*args)


@contextlib.contextmanager
def _one_intra_op_thread(plan: FusedPlan):
    """One intra-op thread on the calling thread while a plan of several parts runs (its steps, forward and
    backward, and the concatenations between them): an OpenMP team left by a parallel region spins on a core for
    a while before it sleeps (libgomp's default wait policy), and with two cores that is the core the other part's
    thread needs (on the idle 2-core machine the parts ran at one thread's speed, 13.6k training nodes/s, when
    only the parts themselves ran with one thread)."""
    if len(plan.parts) == 1:
        yield
        return
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


def _run_parts(fn: Callable, items: list) -> list:
    """``[fn(item) for item in items]``, one item per thread (the caller holds :func:`_one_intra_op_thread`)."""
    if len(items) == 1:
        return [fn(items[0])]
    futures = [_pool().submit(_no_grad, fn, item) for item in items[1:]]
    first = fn(items[0])
    return [first, *(f.result() for f in futures)]


def _step(h, gates, weight, bias, weight_ih, bias_ih, weight_hh, bias_hh, edges: FusedEdges):
    """The fused forward step of one part; returns the new states and what the backward pass needs."""
    n, d = h.shape
    sources = h.index_select(0, edges.source)
    pre = torch.empty_like(sources)
    b = edges.bounds
    for t in range(len(b) - 1):
        if b[t + 1] > b[t]:
            w = weight[t * d : (t + 1) * d]
            if bias is None:
                torch.mm(sources[b[t] : b[t + 1]], w.t(), out=pre[b[t] : b[t + 1]])
            else:
                torch.addmm(bias[t * d : (t + 1) * d], sources[b[t] : b[t + 1]], w.t(), out=pre[b[t] : b[t + 1]])
    messages = pre * gates
    aggregated = h.new_zeros(n, d).index_add_(0, edges.target, messages)
    gi = torch.addmm(bias_ih, aggregated, weight_ih.t())
    gh = torch.addmm(bias_hh, h, weight_hh.t())
    rz = torch.sigmoid_(gi[:, : 2 * d].add_(gh[:, : 2 * d]))
    r, z = rz[:, :d], rz[:, d:]
    gh_n = gh[:, 2 * d :]
    new_gate = torch.tanh_(torch.addcmul(gi[:, 2 * d :], r, gh_n))
    out = torch.addcmul(new_gate, z, h - new_gate)
    return out, (sources, pre, aggregated, rz, gh_n, new_gate)


def _backward(grad, h, gates, weight, has_bias, weight_ih, weight_hh, saved, edges: FusedEdges, need_gates: bool):
    """The gradients of one part's step (see :func:`_step`)."""
    sources, pre, aggregated, rz, gh_n, new_gate = saved
    n, d = h.shape
    r, z = rz[:, :d], rz[:, d:]
    # h' = n + z (h - n)
    d_gi = torch.empty(n, 3 * d, dtype=h.dtype, device=h.device)
    d_gh = torch.empty(n, 3 * d, dtype=h.dtype, device=h.device)
    d_n = d_gi[:, 2 * d :]
    torch.mul(grad, 1 - z, out=d_n)
    d_n.mul_(1 - new_gate * new_gate)  # through tanh: d gi_n
    torch.mul(d_n, r, out=d_gh[:, 2 * d :])  # d gh_n
    d_rz = d_gi[:, : 2 * d]
    torch.mul(d_n, gh_n, out=d_rz[:, :d])  # d r
    torch.mul(grad, h - new_gate, out=d_rz[:, d:])  # d z
    d_rz.mul_(rz * (1 - rz))  # through the sigmoid
    d_gh[:, : 2 * d] = d_rz
    grad_weight_ih = d_gi.t().mm(aggregated)
    grad_bias_ih = d_gi.sum(0)
    grad_weight_hh = d_gh.t().mm(h)
    grad_bias_hh = d_gh.sum(0)
    d_aggregated = d_gi.mm(weight_ih)
    grad_h = torch.addmm(grad * z, d_gh, weight_hh)
    # messages: aggregated = sum over edges of pre * gates
    d_messages = d_aggregated.index_select(0, edges.target)
    grad_gates = d_messages * pre if need_gates else None
    d_pre = d_messages.mul_(gates)
    grad_weight = torch.zeros_like(weight)
    grad_bias = torch.zeros(weight.size(0), dtype=h.dtype, device=h.device) if has_bias else None
    d_sources = torch.empty_like(sources)
    b = edges.bounds
    for t in range(len(b) - 1):
        if b[t + 1] > b[t]:
            rows = slice(b[t], b[t + 1])
            torch.mm(d_pre[rows].t(), sources[rows], out=grad_weight[t * d : (t + 1) * d])
            if grad_bias is not None:
                torch.sum(d_pre[rows], 0, out=grad_bias[t * d : (t + 1) * d])
            torch.mm(d_pre[rows], weight[t * d : (t + 1) * d], out=d_sources[rows])
    grad_h.index_add_(0, edges.source, d_sources)
    return grad_h, grad_gates, grad_weight, grad_bias, grad_weight_ih, grad_bias_ih, grad_weight_hh, grad_bias_hh


def _forward(h, gates, weights, plan: FusedPlan):
    """All parts' forward steps; the new states (N, D) and each part's saved tensors."""
    if len(plan.parts) == 1:
        out, saved = _step(h, gates, *weights, plan.parts[0])
        return out, [saved]
    results = _run_parts(lambda p: _step(h[p.nodes], gates[p.edges], *weights, p), plan.parts)
    return torch.cat([r[0] for r in results]), [r[1] for r in results]


class _FusedStep(torch.autograd.Function):
    """One GGNN step over all parts, forward and backward written out (see the module docstring)."""

    @staticmethod
    def forward(ctx, h, gates, weight, bias, weight_ih, bias_ih, weight_hh, bias_hh, plan):  # type: ignore[override]
        out, saved = _forward(h, gates, (weight, bias, weight_ih, bias_ih, weight_hh, bias_hh), plan)
        ctx.plan, ctx.saved, ctx.has_bias = plan, saved, bias is not None
        ctx.save_for_backward(h, gates, weight, weight_ih, weight_hh)
        return out

    @staticmethod
    def backward(ctx, grad: Tensor):  # type: ignore[override]
        with _one_intra_op_thread(ctx.plan):
            return _FusedStep._backward(ctx, grad)

    @staticmethod
    def _backward(ctx, grad: Tensor):
        h, gates, weight, weight_ih, weight_hh = ctx.saved_tensors
        plan: FusedPlan = ctx.plan
        need_gates = ctx.needs_input_grad[1]

        def part(i: int):
            p = plan.parts[i]
            return _backward(
                grad[p.nodes],
                h[p.nodes],
                gates[p.edges],
                weight,
                ctx.has_bias,
                weight_ih,
                weight_hh,
                ctx.saved[i],
                p,
                need_gates,
            )

        results = _run_parts(part, list(range(len(plan.parts))))
        del ctx.saved
        if len(results) == 1:
            return (*results[0], None)
        grads = [torch.cat([r[0] for r in results]), torch.cat([r[1] for r in results]) if need_gates else None]
        for k in range(2, 8):
            parts = [r[k] for r in results if r[k] is not None]
            grads.append(torch.stack(parts).sum(0) if parts else None)
        return (*grads, None)


def fused_steps(
    h: Tensor, plan: FusedPlan, gates: Tensor, message_linear: torch.nn.Linear, gru: torch.nn.GRUCell, num_steps: int
) -> Tensor:
    """``num_steps`` fused steps from ``h`` (N, D); ``gates`` (E', D) in the plan's edge order, already divided by
    the targets' in-degrees (without position gating: the in-degree reciprocals alone, (E', D))."""
    weights = (message_linear.weight, message_linear.bias, gru.weight_ih, gru.bias_ih, gru.weight_hh, gru.bias_hh)
    with _one_intra_op_thread(plan):
        if torch.is_grad_enabled():
            for _ in range(num_steps):
                h = _FusedStep.apply(h, gates, *weights, plan)
        else:
            for _ in range(num_steps):
                h = _forward(h, gates, weights, plan)[0]
    return h
