"""Shared test setup: one torch thread per process, the tiny model configs every architecture test runs over, the
training config composed in-process, a training run in-process, and one tiny trained run that every test needing a
finished run shares.

Tiers: `pytest` runs the default tier (in-process, minutes); `pytest -m integration` the end-to-end tests that only a
real process proves (signals, DDP, the `__main__` path, stdin, W&B's per-process state, the sweep runner's trials);
`pytest -m slow` the long or network-dependent ones. pytest-xdist runs one worker per core.
"""
from __future__ import annotations

import copy
import functools
import logging
import os
from pathlib import Path

import pytest
import torch

# One thread per worker: xdist runs one worker per core, and two threads per worker on two cores spin against each
# other many times slower.
torch.set_num_threads(int(os.environ.get("SEQBENCH_TEST_THREADS", "1")))
os.environ.setdefault("WANDB_MODE", "offline")  # nothing here may wait on the network
os.environ.setdefault("HF_HUB_OFFLINE", "1")

ROOT = Path(__file__).resolve().parents[1]
TESTS = Path(__file__).resolve().parent

@pytest.fixture(autouse=True)
def _no_log_handlers_on_closed_streams():
    """Hydra's job logging (a training run in-process) attaches StreamHandlers to the sys.stdout/stderr that pytest
    lent the test that ran it, and pytest closes those afterwards: a later test's log record (sacreBLEU's bootstrap
    logs at INFO) would print "--- Logging error ---" into that test's stderr. Such handlers are removed first."""
    loggers = [logging.getLogger(), *(logger for logger in logging.Logger.manager.loggerDict.values()
                                      if isinstance(logger, logging.Logger))]
    for logger in loggers:
        for handler in list(logger.handlers):
            if getattr(getattr(handler, "stream", None), "closed", False):
                logger.removeHandler(handler)
    yield


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
    from seqbench.models.interface import build_model

    torch.manual_seed(0)
    return build_model(dict(MODEL_CASES[case], **overrides), src_vocab, tgt_vocab).eval()


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


# conf/debug/limit.yaml cuts batches, decoding length and measurements; on top: a tiny corpus, 4 updates, beam 2.
TINY = ["debug=limit", "data.corpus.train_size=120", "data.corpus.valid_per_bucket=1",
        "data.corpus.test_per_bucket=1", "data.vocab_size=300", "data.max_tokens=1024", "trainer.max_steps=4",
        "module.decoding.beam_size=2", "callbacks.progress_bar=null", "threads=1"]
TINY_MODELS = {
    "transformer": ["model=transformer", "model.d_model=32", "model.n_heads=2", "model.d_ff=64",
                    "model.encoder_layers=1", "model.decoder_layers=1"],
    **{f"rnn_{attention}": ["model=rnn", f"model.attention={attention}", "model.embed_dim=32", "model.hidden_size=32"]
       for attention in ("none", "bahdanau", "luong_dot", "luong_general", "luong_concat")},
    # rotary positions have no table: max_positions far below the data's lengths passes the preflight and trains
    "transformer_rope": ["model=transformer", "model.d_model=32", "model.n_heads=2", "model.d_ff=64",
                         "model.encoder_layers=1", "model.decoder_layers=1", "model.positions=rope",
                         "model.max_positions=6"],
    "cnn": ["model=cnn", "model.embed_dim=32", "model.out_embed_dim=32", "model.encoder_layers=[[32,3]]",
            "model.decoder_layers=[[32,3]]"],
}


@functools.cache
def _composed(overrides: tuple[str, ...]):
    from seqbench.config.compose import compose

    return compose(list(overrides), hydra_config=True)


def compose_train(overrides=(), hydra_config: bool = False):
    """conf/train.yaml with these overrides (seqbench.config.compose.compose), composed once per process: tests
    compose the same configs often. Its Hydra config is made current again, as compose does."""
    from hydra.core.hydra_config import HydraConfig
    from omegaconf import open_dict

    cfg = copy.deepcopy(_composed(tuple(overrides)))
    HydraConfig.instance().set_config(cfg)
    if not hydra_config:
        with open_dict(cfg):
            del cfg["hydra"]
    return cfg


_DATA_CACHE: list[Path] = []  # this worker's data cache (data_cache), once the session has started


def dotted_leaves(tree: dict, prefix: str = "") -> dict:
    """A nested config (a recipe file, a YAML tree) as {"optimizer.lr": value, ...}: Hydra's dotted keys."""
    out = {}
    for key, value in tree.items():
        out.update(dotted_leaves(value, f"{prefix}{key}.") if isinstance(value, dict) else {f"{prefix}{key}": value})
    return out


@pytest.fixture(scope="session", autouse=True)
def lightning_logs_like_a_run():
    """Imported with no root handler, Lightning gives its loggers a handler bound to the stderr of that moment; under
    `seqbench train` its info lines go through Hydra's logging to stdout instead. In-process runs log the same way,
    so stderr holds only what the command itself prints (the one-line errors the tests read)."""
    import logging

    import lightning.pytorch  # noqa: F401 - imported here so that its handlers exist to be reset

    for name in ("lightning.pytorch", "lightning.fabric"):
        logging.getLogger(name).handlers.clear()
        logging.getLogger(name).propagate = True


@pytest.fixture(scope="session", autouse=True)
def data_cache(tmp_path_factory) -> Path:
    """One data cache per worker: every tiny corpus and tokenizer is built once, not once per test."""
    _DATA_CACHE[:] = [tmp_path_factory.mktemp("data_cache")]
    return _DATA_CACHE[0]


def train_in_process(run_dir: Path, overrides=(), cache_dir: Path | None = None) -> dict:
    """`seqbench train <overrides>` into `run_dir`, in this process, through seqbench.training.run.run (as the
    lightning-hydra-template's tests train): returns the results record; raises what the run raises. The data comes
    from this worker's data cache unless `cache_dir` says otherwise."""
    from seqbench.training.run import run

    run_dir = Path(run_dir)
    cache_dir = cache_dir or _DATA_CACHE[0]
    cfg = compose_train([f"paths.cache_dir={cache_dir}", f"paths.output_dir={run_dir}", *overrides])
    return run(cfg)


def seqbench_cli(argv: list[str], capsys) -> tuple[int, str, str]:
    """`seqbench <argv>` in this process: (exit status, stdout, stderr)."""
    from seqbench.commands import main

    capsys.readouterr()
    try:
        status = main(argv)
    except SystemExit as stop:
        status = stop.code
    out, err = capsys.readouterr()
    return status, out, err


# The run every test of a finished run shares: a tiny Transformer trained for one whole epoch (so a validation writes
# a best checkpoint) with EMA weights that lag far behind fast-moving raw weights (the run's test hypotheses come from
# the EMA weights only if the final test really evaluates them), the two most recent checkpoints kept, and the test
# set decoded greedily too.
TRAINED_RUN = [
    *(o for o in TINY if not o.startswith("trainer.max_steps")), *TINY_MODELS["transformer"],
    "trainer.max_steps=-1", "callbacks=ema", "callbacks.ema.decay=0.5", "scheduler.kind=constant", "optimizer.lr=0.01",
    "callbacks.recent_checkpoints.every_n_train_steps=1", "callbacks.recent_checkpoints.save_top_k=2",
    "module.test_greedy=true",
]


def shared_dir(tmp_path_factory) -> Path:
    """A folder every xdist worker of this session sees (the session's base temp folder without xdist)."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


@pytest.fixture(scope="session")
def trained_run(tmp_path_factory) -> Path:
    """The shared tiny run's directory, trained once for the whole session (xdist workers wait on a file lock for
    the first one). Read it; copy it before changing anything."""
    from filelock import FileLock

    root = shared_dir(tmp_path_factory)
    run_dir = root / "trained_run" / "run"
    with FileLock(str(root / "trained_run.lock")):
        if not (run_dir / "results.json").is_file():
            train_in_process(run_dir, TRAINED_RUN, cache_dir=run_dir.parent / "cache")
    return run_dir


@pytest.fixture
def wandb_env(tmp_path, monkeypatch):
    """A machine without W&B credentials or settings, and W&B's settings re-read after each change
    (the W&B logger's tests and the W&B adapter's)."""
    import wandb

    for key in [k for k in os.environ if k.startswith("WANDB_")] + ["NETRC"]:
        monkeypatch.delenv(key, raising=False)
    (tmp_path / "home").mkdir()
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    wandb.teardown()  # W&B reads its environment once per process, at setup
    yield monkeypatch
    wandb.teardown()
