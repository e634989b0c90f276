"""Shared test setup: thread count and the tiny model configs that the contract and overfit tests run over."""
from __future__ import annotations

import os

import torch

torch.set_num_threads(int(os.environ.get("SEQBENCH_TEST_THREADS", "2")))

# Every architecture and variant, tiny. The contract tests run over all of these; a new model adds a line here.
MODEL_CASES = {
    "transformer": {"_target_": "seqbench.models.transformer.Transformer", "d_model": 32, "n_heads": 4,
                    "encoder_layers": 2, "decoder_layers": 2, "d_ff": 64, "dropout": 0.0},
    "transformer_preln_learned": {"_target_": "seqbench.models.transformer.Transformer", "d_model": 32,
                                  "n_heads": 2, "encoder_layers": 2, "decoder_layers": 2, "d_ff": 64,
                                  "dropout": 0.0, "norm_first": True, "positions": "learned",
                                  "tie_output_embeddings": False},
    "transformer_rope": {"_target_": "seqbench.models.transformer.Transformer", "d_model": 32, "n_heads": 4,
                         "encoder_layers": 2, "decoder_layers": 2, "d_ff": 64, "dropout": 0.0, "positions": "rope"},
    # RNNs: 2+2 layers; luong_dot projects its bidirectional memory (48 -> 24); luong_general ties the output through
    # a projection (24 -> 16); concat has a unidirectional encoder; the LSTM has 1 encoder layer for 2 decoder layers.
    "rnn_none": {"_target_": "seqbench.models.rnn.RNNSeq2Seq", "attention": "none", "embed_dim": 16,
                 "hidden_size": 24, "encoder_layers": 2, "decoder_layers": 2, "dropout": 0.0},
    "rnn_bahdanau": {"_target_": "seqbench.models.rnn.RNNSeq2Seq", "attention": "bahdanau", "embed_dim": 16,
                     "hidden_size": 24, "encoder_layers": 2, "decoder_layers": 2, "dropout": 0.0,
                     "tie_output_embeddings": True},
    "rnn_luong_dot": {"_target_": "seqbench.models.rnn.RNNSeq2Seq", "attention": "luong_dot", "embed_dim": 16,
                      "hidden_size": 24, "encoder_layers": 2, "decoder_layers": 2, "dropout": 0.0},
    "rnn_luong_general": {"_target_": "seqbench.models.rnn.RNNSeq2Seq", "attention": "luong_general",
                          "embed_dim": 16, "hidden_size": 24, "encoder_layers": 2, "decoder_layers": 2,
                          "dropout": 0.0, "tie_output_embeddings": True},
    "rnn_luong_concat": {"_target_": "seqbench.models.rnn.RNNSeq2Seq", "attention": "luong_concat",
                         "embed_dim": 16, "hidden_size": 24, "encoder_layers": 2, "decoder_layers": 2,
                         "bidirectional": False, "dropout": 0.0},
    "rnn_lstm_luong_general_no_feed": {"_target_": "seqbench.models.rnn.RNNSeq2Seq", "cell": "lstm",
                                       "attention": "luong_general", "input_feeding": False, "embed_dim": 16,
                                       "hidden_size": 24, "encoder_layers": 1, "decoder_layers": 2,
                                       "dropout": 0.0},
    # ConvS2S: the decoder widens 16 -> 24 (residual projection); kernel5 also has an even encoder kernel (4) and a
    # 1x1 decoder conv (empty incremental history).
    "cnn": {"_target_": "seqbench.models.convs2s.ConvS2S", "embed_dim": 16, "encoder_layers": [[16, 3], [16, 3]],
            "decoder_layers": [[16, 3], [24, 3]], "out_embed_dim": 16, "dropout": 0.0},
    "cnn_kernel5": {"_target_": "seqbench.models.convs2s.ConvS2S", "embed_dim": 16,
                    "encoder_layers": [[16, 5], [24, 4]], "decoder_layers": [[16, 5], [16, 5], [24, 1]],
                    "out_embed_dim": 12, "dropout": 0.0},
}


def build_tiny_model(case: str, src_vocab: int = 40, tgt_vocab: int = 45, **overrides):
    from hydra.utils import instantiate

    cfg = dict(MODEL_CASES[case], **overrides)
    torch.manual_seed(0)
    return instantiate(cfg, src_vocab_size=src_vocab, tgt_vocab_size=tgt_vocab).eval()


SRC_VOCAB, TGT_VOCAB = 40, 45  # the tiny vocabularies of build_tiny_model and random_batch


def random_batch(lengths=(7, 4, 5), tgt_len=6, seed=0):
    """A padded source batch with the given lengths and a <bos>-initial target batch, seeded."""
    from seqbench.common.tokens import BOS_ID, PAD_ID

    g = torch.Generator().manual_seed(seed)
    src = torch.full((len(lengths), max(lengths)), PAD_ID)
    for i, n in enumerate(lengths):
        src[i, :n] = torch.randint(4, SRC_VOCAB, (n,), generator=g)
    tgt = torch.randint(4, TGT_VOCAB, (len(lengths), tgt_len), generator=g)
    tgt[:, 0] = BOS_ID
    return src, src != PAD_ID, tgt
