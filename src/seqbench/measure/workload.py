"""The bench's workload: fixed reference models, one per family, and generated batches every model trains on.

Every model trains on the same generated batches (`pairs` random pairs of `lengths` tokens, fixed seed, a
`max_tokens` token budget through seqbench.data.batching), so two rows differ only in the model and the code that
trains it. TINY is the same at toy sizes, for the tests.
"""
from __future__ import annotations

import random
from dataclasses import dataclass, replace

import torch

from seqbench.data.batching import collate, token_budget_batches
from seqbench.models.interface import build_model

FAMILIES = ("transformer", "rnn", "cnn")


@dataclass(frozen=True)
class Setting:
    """The workload: shapes of the reference models and of the generated data."""
    models: dict                 # family -> model config (`_target_` and its keys)
    vocab_size: int              # source and target vocabulary (4 special ids included)
    pairs: int                   # generated training pairs
    lengths: tuple[int, int]     # source lengths drawn uniformly from this range (tokens, inclusive)
    max_tokens: int              # token budget per batch, padding included (fairseq's --max-tokens)
    decode_sentences: int        # sources decoded for the decoding rows
    decode_tokens: int           # tokens every hypothesis is forced to (min_len = max_len)
    beam_size: int
    peak_seconds: float          # matmul-peak measurement time per dtype when no fit cached peak exists
    seed: int = 0


# One reference configuration per family, with fairseq-sized counterparts (dropout 0.1 each).
REFERENCE = Setting(
    models={
        "transformer": {"_target_": "seqbench.models.transformer.Transformer", "d_model": 256, "n_heads": 4,
                        "encoder_layers": 3, "decoder_layers": 3, "d_ff": 1024, "dropout": 0.1},
        "rnn": {"_target_": "seqbench.models.rnn.RNNSeq2Seq", "cell": "lstm", "attention": "luong_general",
                "embed_dim": 256, "hidden_size": 256, "encoder_layers": 2, "decoder_layers": 2,
                "bidirectional": True, "input_feeding": True, "dropout": 0.1},
        "cnn": {"_target_": "seqbench.models.convs2s.ConvS2S", "embed_dim": 256, "encoder_layers": [[256, 3]] * 3,
                "decoder_layers": [[256, 3]] * 3, "out_embed_dim": 256, "dropout": 0.1},
    },
    vocab_size=8000, pairs=5000, lengths=(5, 40), max_tokens=3000, decode_sentences=200, decode_tokens=23,
    beam_size=5, peak_seconds=1.0)

# The same code paths at toy sizes, for the tests (seconds, not minutes).
TINY = replace(
    REFERENCE,
    models={
        "transformer": {**REFERENCE.models["transformer"], "d_model": 32, "n_heads": 2, "encoder_layers": 1,
                        "decoder_layers": 1, "d_ff": 64},
        "rnn": {**REFERENCE.models["rnn"], "embed_dim": 16, "hidden_size": 16, "encoder_layers": 1,
                "decoder_layers": 1},
        "cnn": {**REFERENCE.models["cnn"], "embed_dim": 16, "encoder_layers": [[16, 3]], "decoder_layers": [[16, 3]],
                "out_embed_dim": 16},
    },
    vocab_size=200, pairs=200, max_tokens=600, decode_sentences=12, peak_seconds=0.05)


def setting(tiny: bool = False, decode_tokens: int | None = None, vocab_size: int | None = None) -> Setting:
    """REFERENCE (TINY with `tiny`), with the forced hypothesis length and the vocabulary replaced where given."""
    chosen = TINY if tiny else REFERENCE
    if decode_tokens:
        chosen = replace(chosen, decode_tokens=decode_tokens)
    if vocab_size:
        chosen = replace(chosen, vocab_size=vocab_size)
    return chosen


def generated_pairs(setting: Setting) -> list[tuple[int, list[int], list[int]]]:
    """(index, source ids, target ids): source lengths uniform over `lengths`, each target 0.8-1.2x its source (as
    translations are), tokens uniform over the non-special ids. Seeded: every run trains on the same batches."""
    rng = random.Random(setting.seed)
    low, high = setting.lengths
    pairs = []
    for i in range(setting.pairs):
        src_len = rng.randint(low, high)
        tgt_len = min(high, max(low, round(src_len * rng.uniform(0.8, 1.2))))
        pairs.append((i, [rng.randrange(4, setting.vocab_size) for _ in range(src_len)],
                      [rng.randrange(4, setting.vocab_size) for _ in range(tgt_len)]))
    return pairs


def make_batches(pairs, max_tokens: int, seed: int) -> list[dict]:
    """Token-budget batches (the target side counts its <eos>, as the data module does), in a seeded order."""
    groups = token_budget_batches([len(s) for _, s, _ in pairs], [len(t) + 1 for _, _, t in pairs], max_tokens,
                                  seed=seed)
    random.Random(seed).shuffle(groups)
    return [collate([pairs[i] for i in group]) for group in groups]


def decode_batches(pairs, setting: Setting) -> list[dict]:
    """The first decode_sentences pairs in token-budget batches of similar lengths, as the test pass batches."""
    subset = pairs[:setting.decode_sentences]
    lengths = [len(s) for _, s, _ in subset]
    return [collate([subset[i] for i in group])
            for group in token_budget_batches(lengths, lengths, setting.max_tokens, seed=setting.seed)]


def build(config: dict, vocab_size: int, seed: int):
    torch.manual_seed(seed)
    return build_model(config, vocab_size, vocab_size)


def baseline_models(setting: Setting, families: list[str]) -> list[tuple[str, str, object]]:
    """(name, the family whose seqbench model has its shape, model): nn.Transformer always, nn.LSTM with rnn."""
    from seqbench.measure.baselines import PlainLSTM, PlainTransformer

    t, r, v = setting.models["transformer"], setting.models["rnn"], setting.vocab_size
    torch.manual_seed(setting.seed)
    out = [("nn.Transformer", "transformer", PlainTransformer(
        v, v, t["d_model"], t["n_heads"], t["encoder_layers"], t["decoder_layers"], t["d_ff"], t["dropout"]))]
    if "rnn" in families:
        out.append(("nn.LSTM", "rnn", PlainLSTM(v, v, r["embed_dim"], r["hidden_size"], r["encoder_layers"],
                                                r["decoder_layers"], r["dropout"])))
    return out
