"""RNN encoder-decoders: the fixed-context model of Cho et al. (2014) and the attention of Bahdanau et al. and Luong
et al.

One class, `RNNSeq2Seq`, with a GRU or LSTM (`cell`) and one of five `attention` settings:

  none           RNNencdec (Cho et al. 2014, "Learning Phrase Representations using RNN Encoder-Decoder for SMT";
                 the baseline of Bahdanau et al. 2015). The decoder never sees source positions, only a fixed summary
                 c = the encoder's final top-layer states (both directions). c initialises the decoder (through the
                 bridge) and is concatenated to the decoder input and to the readout at every step.
  bahdanau       RNNsearch (Bahdanau, Cho & Bengio 2015, "Neural Machine Translation by Jointly Learning to Align and
                 Translate"): additive attention scored with the PREVIOUS decoder state,
                     e_tj = v^T tanh(W_s s_{t-1} + W_h h_j),   a_t = softmax_j(e_tj),   c_t = sum_j a_tj h_j,
                 and c_t enters the recurrence: s_t = RNN(s_{t-1}, [y_{t-1}; c_t]). W_h h_j is computed once, in encode.
  luong_dot      Global attention (Luong, Pham & Manning 2015, "Effective Approaches to Attention-based Neural Machine
  luong_general  Translation") scored with the CURRENT top-layer state s_t, after the recurrence step:
  luong_concat       dot: s_t^T h_j      general: s_t^T W h_j      concat: v^T tanh(W [s_t; h_j])
                 and the attentional state h~_t = tanh(W_c [s_t; c_t]) feeds the softmax. With `input_feeding`, h~_{t-1}
                 is concatenated to the next input (so the decoder knows its past alignments); without it the decoder
                 RNN does not depend on attention, so it runs fused over the whole target and attention is one batched
                 product. dot needs h_j in the decoder's size: a bidirectional memory is first projected (no bias).

The encoder runs over packed sequences, so padding never reaches a state; its outputs h_j are the "memory". A bridge
tanh(Linear) per decoder layer maps the encoder's final states (both directions) to the decoder's initial hidden (and,
for LSTM, cell) state: decoder layer l starts from encoder layer l, or from the top one when the depths differ. The
readout of none/bahdanau is the papers' deep output t_t = tanh(W_o [s_t; c_t; E y_{t-1}]) (tanh in place of their
maxout) of size embed_dim; Luong's h~_t is its readout. Either goes through dropout and then the output layer.
"""
from __future__ import annotations

import functools
from collections.abc import Mapping

import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from seqbench.common.specs import integer, one_of
from seqbench.common.tokens import PAD_ID
from seqbench.models.interface import Seq2Seq, depth_tag
from seqbench.models.linear import Linear

CELLS = {"gru": nn.GRU, "lstm": nn.LSTM}
RNNState = torch.Tensor | tuple[torch.Tensor, torch.Tensor]  # nn.GRU's h, or nn.LSTM's (h, c): [L,B,H] each
ATTENTION = ("none", "bahdanau", "luong_dot", "luong_general", "luong_concat")


class Attention(nn.Module):
    """Scores queries [B,T,Dq] against keys precomputed once per sentence; masked softmax over source positions."""

    def __init__(self, kind: str, query_dim: int, memory_dim: int):
        super().__init__()
        # bahdanau and luong_concat share the additive form: W [s; h_j] = W_s s + W_h h_j
        self.additive = kind in ("bahdanau", "luong_concat")
        if self.additive:
            self.key_proj = Linear(memory_dim, query_dim)  # W_h h_j + b: the precomputed keys
            self.query_proj = Linear(query_dim, query_dim, bias=False)  # W_s
            self.v = Linear(query_dim, 1, bias=False)
        elif kind == "luong_general" or memory_dim != query_dim:
            self.key_proj = Linear(memory_dim, query_dim, bias=False)  # s^T W h_j = s . (W h_j)
        else:
            self.key_proj = nn.Identity()  # luong_dot with memory already the decoder's size

    def keys(self, memory: torch.Tensor) -> torch.Tensor:  # [B,S,M] -> [B,S,Dq]
        return self.key_proj(memory)

    def forward(self, query: torch.Tensor, keys: torch.Tensor, memory: torch.Tensor,
                mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """query [B,T,Dq], keys [B,S,Dq], memory [B,S,M], mask [B,S] -> context [B,T,M], weights [B,T,S]."""
        if self.additive:
            scores = self.v(torch.tanh(self.query_proj(query)[:, :, None] + keys[:, None])).squeeze(-1)
        else:
            scores = query @ keys.transpose(1, 2)
        # -inf before the softmax: exactly zero weight on padding, real positions sum to one
        weights = scores.masked_fill(~mask[:, None, :], float("-inf")).softmax(-1)
        return weights @ memory, weights


class RNNSeq2Seq(Seq2Seq):
    def __init__(self, src_vocab_size: int, tgt_vocab_size: int, cell: str = "gru", attention: str = "bahdanau",
                 embed_dim: int = 256, hidden_size: int = 256, encoder_layers: int = 1, decoder_layers: int = 1,
                 bidirectional: bool = True, input_feeding: bool = True, dropout: float = 0.1,
                 tie_output_embeddings: bool = False):
        super().__init__()
        self.validate_config({"cell": cell, "attention": attention})  # one line, not a KeyError of CELLS below
        self.src_vocab_size, self.tgt_vocab_size = src_vocab_size, tgt_vocab_size
        self.cell, self.attention_kind = cell, attention
        self.luong = attention.startswith("luong")
        self.input_feeding = self.luong and input_feeding
        # Bahdanau's context and Luong's input feed enter step t's recurrence, so those decoders loop over time.
        self.sequential = attention == "bahdanau" or self.input_feeding
        E, H = embed_dim, hidden_size
        M = H * (2 if bidirectional else 1)  # memory size: both directions side by side
        self.embed_dim, self.hidden_size, self.memory_dim = E, H, M
        rnn = CELLS[cell]

        self.src_embed = nn.Embedding(src_vocab_size, E, padding_idx=PAD_ID)
        self.tgt_embed = nn.Embedding(tgt_vocab_size, E, padding_idx=PAD_ID)
        self.dropout = nn.Dropout(dropout)
        self.encoder = rnn(E, H, encoder_layers, batch_first=True, bidirectional=bidirectional,
                           dropout=dropout if encoder_layers > 1 else 0.0)
        n_states = 2 if cell == "lstm" else 1  # hidden (and cell): one bridge per decoder layer and state
        self.bridge = nn.ModuleList(Linear(M, H) for _ in range(n_states * decoder_layers))
        extra_input = H if self.input_feeding else 0 if self.luong else M  # h~_{t-1}, nothing, or c / c_t
        self.decoder = rnn(E + extra_input, H, decoder_layers, batch_first=True,
                           dropout=dropout if decoder_layers > 1 else 0.0)
        self.attention = None if attention == "none" else Attention(attention, H, M)
        # Luong: h~ = tanh(W_c [s; c]) of size H; otherwise the deep output tanh(W_o [s; c; E y]) of size E.
        readout_dim = H if self.luong else E
        self.readout = Linear(H + M + (0 if self.luong else E), readout_dim, bias=not self.luong)
        tie = tie_output_embeddings
        self.pre_output = Linear(readout_dim, E, bias=False) if tie and readout_dim != E else nn.Identity()
        self.output = Linear(E if tie else readout_dim, tgt_vocab_size)
        for p in self.parameters():  # uniform(-0.1, 0.1) as in Sutskever et al. 2014 and Luong et al. 2015
            nn.init.uniform_(p, -0.1, 0.1)
        with torch.no_grad():
            self.src_embed.weight[PAD_ID].zero_()
            self.tgt_embed.weight[PAD_ID].zero_()
        if tie:
            self.output.weight = self.tgt_embed.weight

    # --- encoder -------------------------------------------------------------------------------------------------

    def encode(self, src: torch.Tensor, src_mask: torch.Tensor) -> dict[str, torch.Tensor]:
        batch, src_len = src.shape
        lengths = src_mask.sum(1).clamp(min=1).cpu()  # pack_padded_sequence rejects empty rows
        x = self.dropout(self.src_embed(src))  # [B,S,E]
        out, final = self.encoder(pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False))
        memory = pad_packed_sequence(out, batch_first=True, total_length=src_len)[0]  # [B,S,M], zero on padding
        enc = {"memory": memory, "mask": src_mask}
        layers = self.decoder.num_layers
        for i, (key, f) in enumerate(zip(("hidden", "cell"), final if self.cell == "lstm" else (final,))):
            # [Le*dirs,B,H] -> [B,Le,dirs*H]: each layer's final states, both directions side by side
            f = f.view(self.encoder.num_layers, -1, batch, self.hidden_size).permute(2, 0, 1, 3)
            f = f.reshape(batch, -1, self.memory_dim)
            if key == "hidden" and self.attention is None:
                enc["summary"] = f[:, -1]  # c [B,M]: the fixed context of RNNencdec
            if f.size(1) != layers:
                f = f[:, -1:].expand(-1, layers, -1)
            enc[key] = torch.stack([torch.tanh(self.bridge[i * layers + k](f[:, k])) for k in range(layers)], 1)
        if self.attention is not None:
            enc["keys"] = self.attention.keys(memory)  # [B,S,H], once per sentence
        return enc

    # --- decoder -------------------------------------------------------------------------------------------------

    def _hx(self, d: dict) -> RNNState:
        """Batch-first [B,L,H] state -> the [L,B,H] layout nn.GRU / nn.LSTM want."""
        h = d["hidden"].transpose(0, 1).contiguous()
        return (h, d["cell"].transpose(0, 1).contiguous()) if self.cell == "lstm" else h

    def _batch_first(self, hx: RNNState) -> dict:
        if self.cell == "lstm":
            return {"hidden": hx[0].transpose(0, 1), "cell": hx[1].transpose(0, 1)}
        return {"hidden": hx.transpose(0, 1)}

    def _recur(self, emb: torch.Tensor, enc: dict, hx: RNNState, feed: torch.Tensor | None
               ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None, RNNState]:
        """Decoder RNN over emb [B,T,E] from hx; T must be 1 for the sequential variants.

        Returns top-layer states s [B,T,H], contexts c [B,T,M], attention [B,T,S] (None without attention), new hx.
        """
        if self.attention is None:
            ctx = enc["summary"][:, None].expand(-1, emb.size(1), -1)
            s, hx = self.decoder(torch.cat([emb, ctx], -1), hx)
            return s, ctx, None, hx
        if self.attention_kind == "bahdanau":
            prev = (hx[0] if self.cell == "lstm" else hx)[-1][:, None]  # s_{t-1}: top layer before this step [B,1,H]
            ctx, weights = self.attention(prev, enc["keys"], enc["memory"], enc["mask"])
            s, hx = self.decoder(torch.cat([emb, ctx], -1), hx)
            return s, ctx, weights, hx
        s, hx = self.decoder(torch.cat([emb, feed[:, None]], -1) if self.input_feeding else emb, hx)
        ctx, weights = self.attention(s, enc["keys"], enc["memory"], enc["mask"])  # Luong: current state s_t
        return s, ctx, weights, hx

    def _readout(self, s: torch.Tensor, ctx: torch.Tensor, emb: torch.Tensor | None) -> torch.Tensor:
        """Luong's h~ = tanh(W_c [s; c]) [B,T,H], or the deep output tanh(W_o [s; c; E y]) [B,T,E]."""
        return self.dropout(torch.tanh(self.readout(torch.cat([s, ctx] if self.luong else [s, ctx, emb], -1))))

    def decode(self, tgt_in: torch.Tensor, encoder_out: dict, state: dict | None = None,
               return_attention: bool = False) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor | None]:
        emb = self.dropout(self.tgt_embed(tgt_in))  # [B,T,E]
        start = self.init_state(encoder_out) if state is None else state
        hx, feed = self._hx(start), start.get("feed")  # feed: h~_{t-1} [B,H] with input feeding, else None
        if not self.sequential:  # none / Luong without input feeding: one fused RNN call over all T tokens
            s, ctx, weights, hx = self._recur(emb, encoder_out, hx, None)
            readout = self._readout(s, ctx, emb)
        else:  # attention feeds the recurrence: loop over time, batch the rest afterwards
            steps = []
            for t in range(emb.size(1)):
                s, ctx, w, hx = self._recur(emb[:, t:t + 1], encoder_out, hx, feed)
                if self.input_feeding:  # h~_t is both this step's readout and the next step's input
                    s = self._readout(s, ctx, None)
                    feed = s[:, 0]
                steps.append((s, ctx, w))
            # one step (search) needs no concatenation
            s, ctx, weights = steps[0] if len(steps) == 1 else (torch.cat(x, 1) for x in zip(*steps))
            readout = s if self.input_feeding else self._readout(s, ctx, emb)
        if state is not None:
            state.update(self._batch_first(hx))
            if self.input_feeding:
                state["feed"] = feed
        logits = self.output(self.pre_output(readout))  # [B,T,V]
        if return_attention:
            return logits, None if weights is None else weights[:, None, None]  # [B,1,1,T,S]
        return logits

    def init_state(self, encoder_out: dict) -> dict:
        state = {k: encoder_out[k] for k in ("hidden", "cell") if k in encoder_out}  # [B,L,H]
        if self.input_feeding:
            state["feed"] = encoder_out["hidden"].new_zeros(encoder_out["hidden"].size(0), self.hidden_size)
        return state

    # reorder_state: the generic index_select(0) over the batch-first hidden/cell/feed tensors is exactly right.

    config_specs = {**Seq2Seq.config_specs, "cell": one_of(*CELLS), "attention": one_of(*ATTENTION),
                    **{key: integer(1) for key in ("embed_dim", "hidden_size", "encoder_layers", "decoder_layers")}}

    width_key, scaled_with_width = "hidden_size", ("embed_dim",)  # param-budget sizing: embed_dim keeps its ratio

    @classmethod
    def shape_tags(cls, cfg: Mapping) -> list[str]:
        value = functools.partial(cls.config_value, cfg)
        return [f"{value('cell')}{value('hidden_size')}", depth_tag(value("encoder_layers"), value("decoder_layers"))]

    @classmethod
    def run_label(cls, preset: str, cfg: Mapping) -> str:
        """The preset plus the attention, so a sweep over model.attention does not look like seeds of one model."""
        return f"{preset}-{cls.config_value(cfg, 'attention')}"

    def flops_per_token(self, src_len: int, tgt_len: int) -> float:
        """Forward matmul FLOPs per target token: 2 per weight used (RNN gates included), plus attention scores
        and context sums; encoder work is per source token and amortised as src_len / tgt_len, the bridge per
        sentence."""
        def matmul(module: nn.Module) -> float:
            return 2.0 * sum(p.numel() for n, p in module.named_parameters() if "weight" in n)

        tgt_len = max(tgt_len, 1)
        encoder = matmul(self.encoder)
        decoder = matmul(self.decoder) + matmul(self.readout) + matmul(self.pre_output) + matmul(self.output)
        if self.attention is not None:
            encoder += matmul(self.attention.key_proj)
            # scores (v . tanh(..) or s . k) and context sum per source position, plus W_s s for additive scores
            decoder += 2.0 * src_len * (self.hidden_size + self.memory_dim)
            decoder += matmul(self.attention.query_proj) if self.attention.additive else 0.0
        return decoder + encoder * src_len / tgt_len + matmul(self.bridge) / tgt_len
