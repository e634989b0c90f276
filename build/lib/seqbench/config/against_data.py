"""Phase 3: the config against the prepared data, once it is tokenised and before the first batch: the model's
position table and the token budgets must hold the longest sentence that survived the length filters."""
from __future__ import annotations

from omegaconf import DictConfig

from seqbench.common.errors import InputError
from seqbench.models.interface import family_of


def _decode_positions(src_len: int, cfg: DictConfig) -> int:
    """Positions a decoder uses for a source of `src_len` tokens: <bos> plus its hypothesis length limit
    (seqbench.decoding.search: int(a * src_len + b) tokens, then the forced <eos>)."""
    decoding = cfg.module.decoding
    return int(src_len * decoding.max_len_a + decoding.max_len_b) + 1


def check_against_data(cfg: DictConfig, model_cfg: dict, datamodule) -> None:
    """The longest sentence of every split, as the batches and the model will see it, must fit."""
    longest = datamodule.longest()  # {split: (source, target + 1) tokens}
    filters = "or drop long pairs with data.max_src_len / data.max_tgt_len (words)"
    for split, (src, tgt) in longest.items():
        key = "data.max_tokens" if split == "train" else "data.eval_max_tokens"
        budget = datamodule.token_budget(split)
        if max(src, tgt) > budget:
            raise InputError(f"{key}={budget}: the longest {split} pair has {max(src, tgt)} tokens and does not fit "
                             f"one batch; raise {key} to at least {max(src, tgt)} {filters}")
    positions = family_of(model_cfg).position_limit(model_cfg)
    if positions is None:  # no position table (RNNs, rotary Transformers): any length
        return
    for split, (src, tgt) in longest.items():
        need, what = max(src, tgt), "tokens"
        if split != "train" and _decode_positions(src, cfg) > need:
            need, what = _decode_positions(src, cfg), "positions to decode (module.decoding.max_len_a/b)"
        if need > positions:
            raise InputError(f"model.max_positions={positions}: the longest {split} sentence needs {need} {what}; "
                             f"raise model.max_positions to at least {need} {filters}")
