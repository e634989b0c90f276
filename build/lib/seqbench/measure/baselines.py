"""Plain PyTorch models that `seqbench bench` trains beside seqbench's own, on the same batches, so every
speed comes with a ratio measured side by side on the same machine in the same minute.

They are what a user would write with torch.nn alone, without the `Seq2Seq` contract (no incremental decoding):
`forward(src, src_mask, tgt_in) -> logits [B,T,V]`, with the same shapes as seqbench's reference models.
"""
from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from seqbench.common.tokens import PAD_ID
from seqbench.models.transformer import sinusoidal_table


class PlainTransformer(nn.Module):
    """Token embeddings (scaled, sinusoidal positions) + `torch.nn.Transformer` (post-LN, ReLU) + an output layer
    tied to the target embedding: seqbench's Transformer, as torch.nn ships it."""

    def __init__(self, src_vocab_size: int, tgt_vocab_size: int, d_model: int, n_heads: int, encoder_layers: int,
                 decoder_layers: int, d_ff: int, dropout: float, max_positions: int = 1024):
        super().__init__()
        self.src_embed = nn.Embedding(src_vocab_size, d_model, padding_idx=PAD_ID)
        self.tgt_embed = nn.Embedding(tgt_vocab_size, d_model, padding_idx=PAD_ID)
        self.register_buffer("positions", sinusoidal_table(max_positions, d_model), persistent=False)
        self.scale = math.sqrt(d_model)
        self.dropout = nn.Dropout(dropout)
        self.transformer = nn.Transformer(d_model, n_heads, encoder_layers, decoder_layers, d_ff, dropout,
                                          batch_first=True)
        self.output = nn.Linear(d_model, tgt_vocab_size, bias=False)
        self.output.weight = self.tgt_embed.weight

    def _embed(self, embedding: nn.Embedding, tokens: torch.Tensor) -> torch.Tensor:
        return self.dropout(embedding(tokens) * self.scale + self.positions[:tokens.size(1)])

    def forward(self, src: torch.Tensor, src_mask: torch.Tensor, tgt_in: torch.Tensor) -> torch.Tensor:
        causal = nn.Transformer.generate_square_subsequent_mask(tgt_in.size(1), device=tgt_in.device)
        hidden = self.transformer(self._embed(self.src_embed, src), self._embed(self.tgt_embed, tgt_in),
                                  tgt_mask=causal, tgt_is_causal=True, src_key_padding_mask=~src_mask,
                                  memory_key_padding_mask=~src_mask)
        return self.output(hidden)


class PlainLSTM(nn.Module):
    """Bidirectional `torch.nn.LSTM` encoder over packed sequences, `torch.nn.LSTM` decoder stepped one position at a
    time with input feeding and Luong "general" attention (h~_t = tanh(W_c [s_t; c_t]) fed to the next step), then
    an output layer: seqbench's reference LSTM (models/rnn.py with cell=lstm, attention=luong_general), written
    plainly."""

    def __init__(self, src_vocab_size: int, tgt_vocab_size: int, embed_dim: int, hidden_size: int,
                 encoder_layers: int, decoder_layers: int, dropout: float):
        super().__init__()
        E, H = embed_dim, hidden_size
        self.decoder_layers, self.hidden_size = decoder_layers, H
        self.src_embed = nn.Embedding(src_vocab_size, E, padding_idx=PAD_ID)
        self.tgt_embed = nn.Embedding(tgt_vocab_size, E, padding_idx=PAD_ID)
        self.dropout = nn.Dropout(dropout)
        self.encoder = nn.LSTM(E, H, encoder_layers, batch_first=True, bidirectional=True,
                               dropout=dropout if encoder_layers > 1 else 0.0)
        self.bridge_h, self.bridge_c = nn.Linear(2 * H, H), nn.Linear(2 * H, H)  # encoder's final states -> decoder's
        self.decoder = nn.LSTM(E + H, H, decoder_layers, batch_first=True,
                               dropout=dropout if decoder_layers > 1 else 0.0)
        self.attention = nn.Linear(2 * H, H, bias=False)  # score s^T W h_j
        self.combine = nn.Linear(3 * H, H, bias=False)    # W_c [s; c]
        self.output = nn.Linear(H, tgt_vocab_size)

    def _initial_state(self, final: torch.Tensor, bridge: nn.Linear) -> torch.Tensor:
        # [layers*2, B, H] -> both directions side by side [layers, B, 2H]; the top layers start the decoder's
        layers = final.size(0) // 2
        both = final.view(layers, 2, final.size(1), -1).transpose(1, 2).reshape(layers, final.size(1), -1)
        top = both[-self.decoder_layers:] if layers >= self.decoder_layers else both[-1:].expand(
            self.decoder_layers, -1, -1)
        return torch.tanh(bridge(top)).contiguous()

    def forward(self, src: torch.Tensor, src_mask: torch.Tensor, tgt_in: torch.Tensor) -> torch.Tensor:
        lengths = src_mask.sum(1).clamp(min=1).cpu()
        packed = pack_padded_sequence(self.dropout(self.src_embed(src)), lengths, batch_first=True,
                                      enforce_sorted=False)
        out, (h, c) = self.encoder(packed)
        memory = pad_packed_sequence(out, batch_first=True, total_length=src.size(1))[0]  # [B,S,2H]
        keys = self.attention(memory)  # [B,S,H]
        state = (self._initial_state(h, self.bridge_h), self._initial_state(c, self.bridge_c))
        embedded = self.dropout(self.tgt_embed(tgt_in))
        feed = embedded.new_zeros(src.size(0), self.hidden_size)
        outputs = []
        for t in range(tgt_in.size(1)):
            s, state = self.decoder(torch.cat([embedded[:, t], feed], -1)[:, None], state)  # [B,1,H]
            weights = (s @ keys.transpose(1, 2)).masked_fill(~src_mask[:, None], float("-inf")).softmax(-1)
            feed = torch.tanh(self.combine(torch.cat([s, weights @ memory], -1)))[:, 0]  # h~_t [B,H]
            outputs.append(feed)
        return self.output(self.dropout(torch.stack(outputs, 1)))
