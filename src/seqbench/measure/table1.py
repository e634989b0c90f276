"""What `seqbench bench --table1` measures: the three columns of Table 1 of Vaswani et al. (2017), for one layer of
each family's own code, on this machine.

| layer          | compute per layer | sequential steps | longest path between two positions |
|----------------|-------------------|------------------|------------------------------------|
| self-attention | O(n^2 d)          | O(1)             | O(1)                               |
| recurrent      | O(n d^2)          | O(n)             | O(n)                               |
| convolution    | O(k n d^2)        | O(1)             | O(n/k) undilated (O(log_k n) dilated) |

The layers (`build_layer`): the Transformer's self-attention sublayer (transformer.MultiHeadAttention inside its
residual and LayerNorm, transformer.Sublayer, max(1, d / 64) heads, post-LN as the paper), one layer of the RNN family's
recurrence (rnn.CELLS: nn.GRU, nn.LSTM, d -> d, one direction, RNNSeq2Seq's uniform(-0.1, 0.1) initialisation), and
ConvS2S's block (convs2s.glu_conv: a weight-normalised kernel-k convolution to 2d channels, GLU, the residual scaled by
sqrt(0.5), padded centred as the encoder's or on the left as the decoder's). Dropout is off.

1. Compute per layer (`cost_sweep`): for every n of a grid at a fixed number of tokens per batch (batch = tokens / n,
   at least 1), and every d of a grid at a fixed n: the time of a forward pass (inference, no autograd) and of a
   forward and backward pass (training), each the median over rounds with its 95% interval (every round times every
   point once, in an order that reverses every round, so a drift of the host falls on every point alike: the bench's
   rule, seqbench.measure.bench); the analytic forward FLOPs (`layer_flops`, 2 per multiply-add; the backward is
   twice that); the memory a training forward keeps for the backward (parameters excluded, counted exactly through
   torch.autograd.graph.saved_tensors_hooks) and, on CUDA, the allocator's peak. The exponent of the time per sentence
   on log-log axes (`loglog_fit`: least squares with a t interval, over the upper half of the n grid, where fixed
   costs per call matter least; over the whole d grid) is set beside the FLOPs' own over the same points and the
   table's O(.). The crossover n (`crossovers`) where self-attention's time passes another layer's is found in every
   round and given as the median over rounds with its interval; the FLOPs put it at n = d for the GRU and the
   kernel-3 convolution, 2d for the LSTM.
2. Sequential steps (`latency_sweep`, `training_sweep`): one layer's forward latency on one sentence (batch 1)
   against n at 1, 2 and all threads; each family's whole training step (the bench's reference models,
   seqbench.measure.workload) in target tokens/s as sentences grow at a fixed token budget.
3. Path length (`path_lengths`): in a causal stack of L layers (float64, so a decaying gradient does not underflow),
   the norm ||dy_i/dx_j|| (Frobenius) of the last position i against the distance i - j, at every depth l <= L;
   its reach (the farthest j whose gradient is not exactly zero), the shallowest depth that connects the two ends
   of the sentence, and the decay of log10 ||dy_i/dx_j|| per position (a least-squares slope with its interval).
"""
from __future__ import annotations

import contextlib
import math
import statistics
import time
from dataclasses import asdict, dataclass, replace

import torch
import torch.nn.functional as F
from torch import nn

from seqbench.common.errors import InputError
from seqbench.measure import peaks
from seqbench.measure.speed import clock, median_interval
from seqbench.models.convs2s import SQRT_HALF, glu_conv
from seqbench.models.rnn import CELLS
from seqbench.models.transformer import MultiHeadAttention, Sublayer

KINDS = ("self-attention", "gru", "lstm", "conv")
TABLE = {  # Table 1's rows: the cost's exponents of n and d, and its other two columns
    "self-attention": {"complexity": "O(n²·d)", "n": 2, "d": 1, "sequential": "O(1)", "path": "O(1)"},
    "gru": {"complexity": "O(n·d²)", "n": 1, "d": 2, "sequential": "O(n)", "path": "O(n)"},
    "lstm": {"complexity": "O(n·d²)", "n": 1, "d": 2, "sequential": "O(n)", "path": "O(n)"},
    "conv": {"complexity": "O(k·n·d²)", "n": 1, "d": 2, "sequential": "O(1)", "path": "O(n/(k-1))"},
}
CONFIDENCE = 0.95
WINDOW_SECONDS = 0.05  # each timed window repeats a call until it lasts about this long (one call at least)


@dataclass(frozen=True)
class Table1Setting:
    """The sizes measured; REFERENCE runs in a few minutes on 2 cores, TINY in seconds (the tests)."""
    lengths: tuple[int, ...] = (8, 16, 32, 64, 128, 256, 512, 1024, 2048)  # n of the cost and latency sweeps
    widths: tuple[int, ...] = (128, 256, 512, 1024)  # d of the cost sweep at n = width_length
    width: int = 256                  # d of the n sweep, the latency sweep and the crossover
    width_length: int = 128           # n of the d sweep
    tokens: int = 2048                # tokens per batch of the cost sweeps (batch = tokens / n, at least 1)
    latency_lengths: tuple[int, ...] = (8, 16, 32, 64, 128, 256, 512, 1024)
    sentence_words: tuple[int, ...] = (10, 20, 40, 80, 160)  # sentence lengths of the training-step sweep
    kernel: int = 3                   # the convolution's kernel width
    path_length: int = 33             # positions of the path measurement (its stacks span n - 1 = 32)
    path_width: int = 16
    path_training_steps: int = 300    # Adam steps that train each path stack to carry position 0 to the last
    rounds: int = 6                   # 6 rounds at least give a median a 95% interval
    window_seconds: float = WINDOW_SECONDS


REFERENCE = Table1Setting()
TINY = Table1Setting(lengths=(8, 16, 32, 64), widths=(16, 32), width=32, width_length=16, tokens=128,
                     latency_lengths=(8, 16, 32), sentence_words=(5, 10), path_length=9, path_width=4,
                     path_training_steps=20, rounds=2,
                     window_seconds=0.0)


# --- the layers ------------------------------------------------------------------------------------------------------

class SelfAttention(nn.Module):
    """The Transformer's self-attention sublayer as EncoderLayer runs it (causal: as the decoder's)."""

    def __init__(self, d: int, causal: bool = False):
        super().__init__()
        self.attn, self.sub, self.causal = MultiHeadAttention(d, max(1, d // 64), 0.0), Sublayer(d, 0.0, False), causal

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # [B,n,d] -> [B,n,d]
        return self.sub(x, lambda h: self.attn(h, *self.attn.keys_values(h), causal=self.causal)[0])


class Recurrent(nn.Module):
    """One layer, one direction, of the RNN family's recurrence, initialised as RNNSeq2Seq initialises its own."""

    def __init__(self, cell: str, d: int):
        super().__init__()
        self.rnn = CELLS[cell](d, d, batch_first=True)
        for p in self.rnn.parameters():
            nn.init.uniform_(p, -0.1, 0.1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.rnn(x)[0]


class Convolution(nn.Module):
    """ConvS2S's block (convs2s.Encoder's loop body, or with `causal` the decoder's convolution): GLU convolution
    plus the residual, times sqrt(0.5)."""

    def __init__(self, d: int, kernel: int, causal: bool = False):
        super().__init__()
        self.conv, self.kernel, self.causal = glu_conv(d, d, kernel, 0.0), kernel, causal

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        k = self.kernel
        pad = (k - 1, 0) if self.causal else ((k - 1) // 2, k // 2)
        return (F.glu(self.conv(F.pad(x.transpose(1, 2), pad)), dim=1).transpose(1, 2) + x) * SQRT_HALF


def build_layer(kind: str, d: int, kernel: int = 3, causal: bool = False) -> nn.Module:
    if kind == "self-attention":
        return SelfAttention(d, causal)
    if kind in CELLS:
        return Recurrent(kind, d)
    if kind == "conv":
        return Convolution(d, kernel, causal)
    raise InputError(f"{kind}: no such layer (choose from {', '.join(KINDS)})")


def layer_flops(kind: str, batch: int, n: int, d: int, kernel: int = 3) -> int:
    """Analytic forward FLOPs of one layer (2 per multiply-add of its products; norms, gates and softmax left out,
    as torch's FLOP counter leaves them): self-attention 8nd^2 (query, key, value and output projections) + 4n^2d
    (scores and their weighted sum); a GRU 12nd^2 (3 gates, input and hidden products); an LSTM 16nd^2 (4 gates);
    the GLU convolution 4knd^2 (d to 2d channels, kernel k). Per batch of `batch` sentences of n."""
    per_sentence = {"self-attention": 8 * n * d * d + 4 * n * n * d, "gru": 12 * n * d * d, "lstm": 16 * n * d * d,
                    "conv": 4 * kernel * n * d * d}[kind]
    return batch * per_sentence


def counted_flops(layer: nn.Module, x: torch.Tensor) -> int:
    """The forward FLOPs torch.utils.flop_counter.FlopCounterMode counts. Its registry lacks two CPU kernels, the
    fused scaled_dot_product_attention (_scaled_dot_product_flash_attention_for_cpu) and the oneDNN LSTM, so both are
    counted on their decomposed paths (the MATH attention backend, oneDNN off), which do the same products; autograd
    stays on, so seqbench's Linear takes F.linear (its inference path calls oneDNN, which the counter lacks too)."""
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from torch.utils.flop_counter import FlopCounterMode

    with sdpa_kernel(SDPBackend.MATH), torch.backends.mkldnn.flags(enabled=False), \
            FlopCounterMode(display=False) as counter:
        layer(x)
    return counter.get_total_flops()


# --- fits ------------------------------------------------------------------------------------------------------------

def line_fit(x: list[float], y: list[float], confidence: float = CONFIDENCE) -> dict:
    """Least-squares slope of y on x (scipy.stats.linregress) with its `confidence` interval, slope +- t * stderr with
    t the Student quantile of len(x) - 2 degrees of freedom; no interval from fewer than 3 points."""
    from scipy import stats

    fit = stats.linregress(x, y)
    dof = len(x) - 2
    half = float(stats.t.ppf((1 + confidence) / 2, dof) * fit.stderr) if dof > 0 else None
    return {"slope": float(fit.slope), "intercept": float(fit.intercept),
            "interval": None if half is None else [float(fit.slope) - half, float(fit.slope) + half],
            "points": len(x)}


def loglog_fit(x: list[float], y: list[float], confidence: float = CONFIDENCE) -> dict:
    """The exponent b of y = a x^b: line_fit on log-log axes; "exponent", its interval and the range of x fitted."""
    fit = line_fit([math.log(v) for v in x], [math.log(v) for v in y], confidence)
    return {"exponent": fit["slope"], "interval": fit["interval"], "points": fit["points"], "x": [min(x), max(x)]}


# --- timing ----------------------------------------------------------------------------------------------------------

def _call(layer: nn.Module, x: torch.Tensor, backward: bool, context):
    """One forward (no autograd) or forward and backward of the layer, as a function of nothing."""
    def forward():
        with torch.no_grad(), context():
            layer(x)

    def both():
        layer.zero_grad(set_to_none=True)
        with context():
            y = layer(x)
        y.float().sum().backward()
    return both if backward else forward


def _window(fn, reps: int, device: torch.device) -> float:
    """Seconds per call over `reps` calls."""
    start = clock(device)
    for _ in range(reps):
        fn()
    return (clock(device) - start) / reps


def _calibrated(fn, device: torch.device, seconds: float) -> int:
    """Calls per window: one untimed call (the allocator, first kernels), then one timed call sizes the window to
    about `seconds` (at least one call, at most 1,000)."""
    fn()
    once = _window(fn, 1, device)
    return max(1, min(1000, round(seconds / max(once, 1e-9))))


def _summary(values: list[float]) -> dict:
    median, interval = median_interval(values) if len(values) > 1 else (values[0], None)
    return {"median": median, "interval": interval, "rounds": values}


def saved_for_backward(layer: nn.Module, x: torch.Tensor, context) -> int:
    """Bytes a training forward keeps for the backward (each storage once, the layer's parameters left out): the
    activation memory that grows with n and d, the same on every machine for one kernel choice."""
    own = {p.data_ptr() for p in layer.parameters()} | {x.data_ptr()}
    seen: dict[int, int] = {}

    def pack(t: torch.Tensor):
        if t.data_ptr() not in own and t.device.type != "meta":
            seen[t.data_ptr()] = max(seen.get(t.data_ptr(), 0), t.untyped_storage().nbytes())
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t), context():
        layer(x)
    return sum(seen.values())


def _peak_mb(fn, device: torch.device) -> float | None:
    """The CUDA allocator's peak above what was allocated before one call; None on the CPU (a process's resident
    set is no measure of one layer)."""
    if device.type != "cuda":
        return None
    before = torch.cuda.memory_allocated(device)
    torch.cuda.reset_peak_memory_stats(device)
    fn()
    return (torch.cuda.max_memory_allocated(device) - before) / 2 ** 20


def _timed_rounds(points: list[dict], calls: dict, rounds: int, device: torch.device, log) -> None:
    """Every round times one window of every (point, mode) in turn, reversed every other round; each point gets
    {mode: {median, interval, rounds}}."""
    times: dict = {key: [] for key in calls}
    keys = list(calls)
    for round_ in range(rounds):
        log(f"  round {round_ + 1}/{rounds}")
        for key in keys if round_ % 2 == 0 else keys[::-1]:
            fn, reps = calls[key]
            times[key].append(_window(fn, reps, device))
    for (i, mode), values in times.items():
        points[i][mode] = _summary(values)


def cost_sweep(setting: Table1Setting, axis: str, device: torch.device, context, log=print) -> dict:
    """Compute per layer along `axis` ("n": every length at d = setting.width and setting.tokens per batch; "d":
    every width at n = setting.width_length): one record per (layer, n, d), timed in rounds (`_timed_rounds`)."""
    grid = setting.lengths if axis == "n" else setting.widths
    points, calls, layers = [], {}, {}
    for kind in KINDS:
        for value in grid:
            n, d = (value, setting.width) if axis == "n" else (setting.width_length, value)
            batch = max(1, setting.tokens // n)
            layer = layers.get((kind, d))
            if layer is None:
                torch.manual_seed(0)
                layer = layers[(kind, d)] = build_layer(kind, d, setting.kernel).to(device).train()
            x = torch.randn(batch, n, d, device=device, requires_grad=True)  # a stacked layer's input needs one
            point = {"layer": kind, "n": n, "d": d, "batch": batch,
                     "flops_forward": layer_flops(kind, batch, n, d, setting.kernel)}
            try:
                for mode, backward in (("forward", False), ("forward_backward", True)):
                    fn = _call(layer, x, backward, context)
                    calls[(len(points), mode)] = (fn, _calibrated(fn, device, setting.window_seconds))
                point["saved_mb"] = saved_for_backward(layer, x, context) / 2 ** 20
                point["peak_mb"] = _peak_mb(calls[(len(points), "forward_backward")][0], device)
            except torch.cuda.OutOfMemoryError:
                calls.pop((len(points), "forward"), None)
                point["skipped"] = "out of memory"
                torch.cuda.empty_cache()
            points.append(point)
    log(f"compute per layer against {axis}: {len(calls)} timings a round")
    _timed_rounds(points, calls, setting.rounds, device, log)
    return {"axis": axis, "tokens": setting.tokens if axis == "n" else None,
            "d": setting.width if axis == "n" else None, "n": setting.width_length if axis == "d" else None,
            "points": points}


def _per_sentence(point: dict, mode: str) -> list[float]:
    """A point's per-round times per sentence (the batch's time over its sentences): Table 1 counts per sequence."""
    return [t / point["batch"] for t in point[mode]["rounds"]]


def exponents(sweep: dict) -> dict:
    """{layer: {"flops", "forward", "forward_backward": loglog_fit of the per-sentence value against the axis}},
    over the upper half of the n grid (fixed costs per call flatten the short end) or the whole d grid."""
    axis, fits = sweep["axis"], {}
    for kind in KINDS:
        points = [p for p in sweep["points"] if p["layer"] == kind and "skipped" not in p]
        if axis == "n":
            points = points[len(points) // 2:]
        if len(points) < 2:
            continue
        x = [p[axis] for p in points]
        fits[kind] = {"flops": loglog_fit(x, [p["flops_forward"] / p["batch"] for p in points]),
                      **{mode: loglog_fit(x, [statistics.median(_per_sentence(p, mode)) for p in points])
                         for mode in ("forward", "forward_backward")},
                      "table": TABLE[kind][axis]}
    return fits


def crossing(lengths: list[int], attention: list[float], other: list[float]) -> dict:
    """Where attention's cost first passes the other layer's, the lengths interpolated on log axes between the two
    grid points around it: {"n": float} or {"n": None, "where": "below" | "above"} the grid."""
    logs = [math.log(a / o) for a, o in zip(attention, other)]
    if logs[0] >= 0:
        return {"n": None, "where": "below"}
    for i in range(1, len(logs)):
        if logs[i] >= 0:
            share = -logs[i - 1] / (logs[i] - logs[i - 1])
            return {"n": math.exp(math.log(lengths[i - 1]) + share * math.log(lengths[i] / lengths[i - 1]))}
    return {"n": None, "where": "above"}


def crossovers(sweep: dict) -> dict:
    """{layer: {"flops": crossing, "forward", "forward_backward": the median over rounds of each round's crossing,
    its interval and the rounds'}} of self-attention against every other layer along the n sweep."""
    rows = {kind: [p for p in sweep["points"] if p["layer"] == kind and "skipped" not in p] for kind in KINDS}
    lengths = [p["n"] for p in rows["self-attention"]]
    result = {}
    for kind in KINDS[1:]:
        other = [p for p in rows[kind] if p["n"] in lengths]
        if len(other) != len(lengths):
            continue
        entry = {"flops": crossing(lengths, [p["flops_forward"] for p in rows["self-attention"]],
                                   [p["flops_forward"] for p in other])}
        for mode in ("forward", "forward_backward"):
            per_round = [crossing(lengths, [p[mode]["rounds"][r] for p in rows["self-attention"]],
                                  [p[mode]["rounds"][r] for p in other])
                         for r in range(len(other[0][mode]["rounds"]))]
            found = [c["n"] for c in per_round if c["n"] is not None]
            entry[mode] = {**(_summary(found) if len(found) == len(per_round) else
                              {"median": None, "interval": None, "rounds": found}),
                           "outside": sorted({c["where"] for c in per_round if c["n"] is None})}
        result[kind] = entry
    return result


@contextlib.contextmanager
def threads(count: int):
    """torch's intra-op threads set to `count` for the block, then back."""
    before = torch.get_num_threads()
    torch.set_num_threads(count)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def latency_sweep(setting: Table1Setting, thread_counts: list[int], device: torch.device, context, log=print) -> dict:
    """One layer's forward latency on one sentence (batch 1) against n at each thread count, in rounds."""
    points, calls = [], {}
    for kind in KINDS:
        torch.manual_seed(0)
        layer = build_layer(kind, setting.width, setting.kernel).to(device).eval()
        for n in setting.latency_lengths:
            x = torch.randn(1, n, setting.width, device=device)
            for count in thread_counts:
                with threads(count):
                    fn = _call(layer, x, False, context)
                    calls[(len(points), "seconds")] = (_threaded(fn, count), _calibrated(fn, device,
                                                                                         setting.window_seconds))
                points.append({"layer": kind, "n": n, "d": setting.width, "threads": count})
    log(f"latency against n at {', '.join(map(str, thread_counts))} threads: {len(calls)} timings a round")
    _timed_rounds(points, calls, setting.rounds, device, log)
    return {"d": setting.width, "threads": list(thread_counts), "points": points}


def latency_exponents(latency: dict) -> dict:
    """{threads: {layer: loglog_fit of the batch-1 latency against n over the upper half of its grid}}."""
    fits: dict = {}
    for count in latency["threads"]:
        for kind in KINDS:
            points = [p for p in latency["points"] if p["layer"] == kind and p["threads"] == count]
            points = points[len(points) // 2:]
            if len(points) >= 2:
                fits.setdefault(str(count), {})[kind] = loglog_fit([p["n"] for p in points],
                                                                   [p["seconds"]["median"] for p in points])
    return fits


def _threaded(fn, count: int):
    def call():
        with threads(count):
            fn()
    return call


def training_sweep(setting: Table1Setting, workload, families: list[str], device: torch.device, bf16: bool,
                   log=print) -> dict:
    """Each family's reference model (workload.models) training on sentences of every length of
    setting.sentence_words at the workload's token budget: target tokens/s, one step per round."""
    from seqbench.measure.bench import TrainingRow
    from seqbench.measure.workload import build, generated_pairs, make_batches

    points, runners = [], {}
    for family in families:
        for words in setting.sentence_words:
            shaped = replace(workload, lengths=(words, words), pairs=max(8, 2 * workload.max_tokens // words))
            batch = {k: v.to(device) for k, v in make_batches(generated_pairs(shaped), workload.max_tokens,
                                                              workload.seed)[0].items()}
            runner = TrainingRow(build(workload.models[family], workload.vocab_size, workload.seed), device,
                                 seqbench=True, bf16=bf16)
            runner.warm_up([batch])
            runners[len(points)] = (runner, batch)
            points.append({"family": family, "words": words, "sentences": int(batch["src"].size(0))})
    log(f"training steps against sentence length: {len(points)} a round")
    rates: dict[int, list[float]] = {i: [] for i in runners}
    for round_ in range(setting.rounds):
        for i in list(runners) if round_ % 2 == 0 else list(runners)[::-1]:
            runner, batch = runners[i]
            rates[i].append(runner.window([batch])["target_tokens_per_s"])
    for i, values in rates.items():
        points[i]["target_tokens_per_s"] = _summary(values)
    return {"max_tokens": workload.max_tokens, "models": {f: workload.models[f] for f in families},
            "points": points}


# --- path length -----------------------------------------------------------------------------------------------------

def gradient_norms(layers: list[nn.Module], x: torch.Tensor, position: int) -> list[list[float]]:
    """||dy_position / dx_j|| (Frobenius, over the d x d Jacobian block) for every input position j, of the output
    of every depth of the stack `layers` applied to x [1,n,d]: one list of n norms per depth."""
    x = x.detach().requires_grad_(True)
    outputs, h = [], x
    for layer in layers:
        h = layer(h)
        outputs.append(h)
    norms = []
    for out in outputs:
        squares = torch.zeros(x.size(1), dtype=x.dtype)
        for c in range(x.size(2)):
            grad, = torch.autograd.grad(out[0, position, c], x, retain_graph=True)
            squares += grad[0].pow(2).sum(-1).cpu()
        norms.append(squares.sqrt().tolist())
    return norms


def train_to_carry(stack: list[nn.Module], n: int, d: int, steps: int, batch: int = 16) -> tuple[float, float]:
    """Trains `stack` (float64, Adam, lr 1e-3) to output at the last position the input at the first, the longest
    dependency a sentence of n positions holds, on fresh random inputs each step; returns the loss (mean squared
    error) of the first and of the last step. A stack that cannot carry it far keeps a loss near 1."""
    parameters = [p for layer in stack for p in layer.parameters()]
    optimizer = torch.optim.Adam(parameters, lr=1e-3)
    losses = []
    for layer in stack:
        layer.train()
    for _ in range(steps):
        x = torch.randn(batch, n, d, dtype=torch.float64)
        h = x
        for layer in stack:
            h = layer(h)
        loss = (h[:, -1] - x[:, 0]).pow(2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(float(loss.detach()))
    for layer in stack:
        layer.eval()
    return losses[0], losses[-1]


def reach(norms_by_distance: list[float]) -> int:
    """The farthest distance whose gradient is not exactly zero."""
    return max(distance for distance, norm in enumerate(norms_by_distance) if norm > 0)


def path_lengths(setting: Table1Setting, log=print) -> dict:
    """For each layer kind, a causal stack deep enough for the convolution to span the sentence
    (ceil((n-1)/(k-1)) layers, width setting.path_width, float64), at initialisation and again once trained to carry
    the first position to the last (train_to_carry): the gradient norm of the last position against distance at
    every depth, the reach of every depth, the shallowest depth reaching n - 1, and the decay of log10 norm per
    position at depth 1 (line_fit over the distances reached)."""
    n, d, k = setting.path_length, setting.path_width, setting.kernel
    depth = math.ceil((n - 1) / (k - 1))
    log(f"path length: causal stacks of {depth} layers over {n} positions")
    torch.manual_seed(0)
    x = torch.randn(1, n, d, dtype=torch.float64)
    layers = {}
    for kind in KINDS:
        torch.manual_seed(0)
        stack = [build_layer(kind, d, k, causal=True).double().eval() for _ in range(depth)]
        layers[kind] = _paths(stack, x, n)
        loss_before, loss_after = train_to_carry(stack, n, d, setting.path_training_steps)
        layers[kind]["trained"] = {"steps": setting.path_training_steps, "loss_first": loss_before,
                                   "loss_last": loss_after, **_paths(stack, x, n)}
    return {"n": n, "d": d, "kernel": k, "depth": depth, "causal": True, "dtype": "float64", "layers": layers}


def _paths(stack: list[nn.Module], x: torch.Tensor, n: int) -> dict:
    norms = [row[::-1] for row in gradient_norms(stack, x, n - 1)]  # index: distance n-1-j
    reaches = [reach(row) for row in norms]
    positive = [(i, v) for i, v in enumerate(norms[0][:reaches[0] + 1]) if i > 0 and v > 0]
    decay = line_fit([i for i, _ in positive], [math.log10(v) for _, v in positive]) if len(positive) > 1 else None
    return {"norms": norms, "reach": reaches,
            "connects_at_depth": next((i + 1 for i, r in enumerate(reaches) if r >= n - 1), None),
            "decay_log10_per_position": decay}


def run_table1(setting: Table1Setting, workload, families: list[str], thread_counts: list[int],
               device: torch.device, bf16: bool = False, log=print) -> dict:
    """The three columns measured (the module's docstring), as one record."""
    from seqbench.measure.bench import autocast

    context = lambda: autocast(device, bf16)  # noqa: E731
    by_n = cost_sweep(setting, "n", device, context, log)
    by_d = cost_sweep(setting, "d", device, context, log)
    latency = latency_sweep(setting, thread_counts, device, context, log)
    training = training_sweep(setting, workload, families, device, bf16, log)
    return {"machine": {"device": peaks.device_name(device), "device_type": device.type,
                        "threads": torch.get_num_threads(), "dtype": "bfloat16 autocast" if bf16 else "float32",
                        "torch": torch.__version__},
            "settings": {**asdict(setting), "kinds": list(KINDS), "confidence": CONFIDENCE,
                         "heads": "max(1, d // 64)", "timed": time.strftime("%Y-%m-%d %H:%M:%S")},
            "table": TABLE,
            "compute": {"by_n": by_n, "by_d": by_d, "exponents": {"n": exponents(by_n), "d": exponents(by_d)},
                        "crossovers": crossovers(by_n)},
            "sequential": {"latency": latency, "latency_exponents": latency_exponents(latency),
                           "training": training},
            "path": path_lengths(setting, log)}
