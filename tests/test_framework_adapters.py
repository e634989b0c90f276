"""The frameworks' internals seqbench still reaches, each in one module (its adapter), each pinned here: an upgrade that
removes or changes one fails with a message naming the module to adapt, instead of breaking silently (issue 52)."""
from __future__ import annotations

import os
import pickle

import pytest
import torch
import torch.nn.functional as F


def test_sacrebleus_sentence_statistics_are_what_scoring_metrics_reads():
    import sacrebleu
    from sacrebleu.metrics import BLEU

    from seqbench.scoring.metrics import bleu_from_statistics, bleu_statistics, corpus_bleu

    adapt = (f"sacreBLEU {sacrebleu.__version__}: adapt seqbench.scoring.metrics (bleu_statistics, "
             f"bleu_from_statistics), the one module that reads sacreBLEU's private statistics")
    private = ("_extract_corpus_statistics", "_compute_score_from_stats")
    missing = [name for name in private if not hasattr(BLEU(), name)]
    assert not missing, f"{adapt}: BLEU has no {', '.join(missing)}"
    hypotheses = ["the cat sat on the mat", "a dog barks", "it is raining today in the city"]
    references = ["the cat sat on a mat", "the dog barks", "it rains today in the city"]
    stats = bleu_statistics(hypotheses, references)
    assert stats.shape == (3, 10), f"{adapt}: per-sentence statistics of shape {stats.shape}, not [sentences, 10]"
    assert bleu_from_statistics(stats.sum(0)) == pytest.approx(corpus_bleu(hypotheses, references)[0]), \
        f"{adapt}: summed statistics no longer give the corpus BLEU"


def test_torchs_onednn_linear_is_what_models_linear_calls():
    from seqbench.models import linear

    if not torch.backends.mkldnn.is_available():
        pytest.skip("this torch build has no oneDNN at all (not an upgrade: F.linear is used throughout)")
    adapt = (f"torch {torch.__version__}: adapt seqbench.models.linear, the one module that calls "
             f"torch.ops.mkldnn._linear_pointwise (without it every Linear silently falls back to F.linear)")
    assert linear.AVAILABLE, f"{adapt}: the op is gone"
    x, weight, bias = torch.randn(5, 16), torch.randn(8, 16), torch.randn(8)
    with torch.no_grad():
        out = torch.ops.mkldnn._linear_pointwise(x, weight, bias, "none", [], "")
    assert torch.allclose(out, F.linear(x, weight, bias), atol=1e-5), f"{adapt}: it computes something else"


def test_lightnings_fit_loop_holds_the_loader_resume_state_drops():
    import lightning as L

    trainer = L.Trainer(logger=False, enable_checkpointing=False, enable_progress_bar=False,
                        enable_model_summary=False)
    assert hasattr(trainer.fit_loop, "_combined_loader"), (
        f"lightning {L.__version__}: the fit loop has no _combined_loader; adapt "
        f"seqbench.training.callbacks.ResumeState.on_fit_start, which drops it so a resumed run starts at its batch")


@pytest.fixture
def offline_wandb(tmp_path, monkeypatch):
    """W&B offline, on a machine without its credentials or settings (an empty home), writing under tmp_path."""
    import wandb

    for key in [k for k in os.environ if k.startswith("WANDB_")] + ["NETRC"]:
        monkeypatch.delenv(key, raising=False)
    (tmp_path / "home").mkdir()
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.chdir(tmp_path)
    wandb.teardown()  # W&B reads its environment once per process, at setup
    yield monkeypatch
    wandb.teardown()


def test_wandbs_netrc_lookup_is_what_loggers_wandb_logger_reads(offline_wandb, tmp_path):
    import wandb
    from wandb.errors import AuthenticationError

    adapt = (f"wandb {wandb.__version__}: adapt seqbench.loggers.wandb_logger.has_credentials, the one module that "
             f"reads W&B's netrc lookup (wandb.sdk.lib.wbauth.read_netrc_auth)")
    try:
        from wandb.sdk.lib.wbauth import read_netrc_auth
    except ImportError as error:
        pytest.fail(f"{adapt}: {error}")
    netrc = tmp_path / "netrc"
    netrc.write_text(f"machine wandb.example.org\n  login user\n  password {'2' * 40}\n"
                     f"machine malformed.example.org\n  login user\n  password short\n")
    netrc.chmod(0o600)
    offline_wandb.setenv("NETRC", str(netrc))
    assert read_netrc_auth(host="https://wandb.example.org") == "2" * 40, f"{adapt}: it misses the host's key"
    assert read_netrc_auth(host="https://other.example.org") is None, f"{adapt}: a host without an entry has a key"
    with pytest.raises(AuthenticationError):  # has_credentials counts it: wandb.init reports the malformed key
        read_netrc_auth(host="https://malformed.example.org")


def test_lightnings_wandb_logger_keeps_the_state_loggers_wandb_logger_sets_and_reads(offline_wandb, tmp_path):
    import lightning as L
    import wandb

    from seqbench.loggers.wandb_logger import WandbLogger

    adapt = (f"lightning {L.__version__}, wandb {wandb.__version__}: adapt seqbench.loggers.wandb_logger.WandbLogger "
             f"(experiment, resume_from), the one module that sets and reads Lightning's WandbLogger attributes")
    resumed = WandbLogger(project="seqbench", save_dir=str(tmp_path / "resumed"), group="g")
    init = getattr(resumed, "_wandb_init", None)
    expected = {"project": "seqbench", "dir": str(tmp_path / "resumed"), "id": None, "resume": "allow", "group": "g"}
    assert isinstance(init, dict) and expected.items() <= init.items(), \
        f"{adapt}: _wandb_init is {init!r}, not the wandb.init arguments the constructor was given"
    (tmp_path / "resumed" / "wandb" / "offline-run-20260101_000000-pinned01").mkdir(parents=True)
    resumed.resume_from(10)
    assert (init["id"], resumed.version) == ("pinned01", "pinned01"), f"{adapt}: the version does not read _id"

    fresh = WandbLogger(project="seqbench", save_dir=str(tmp_path / "fresh"))
    assert getattr(fresh, "_experiment", False) is None, f"{adapt}: no _experiment slot before the run starts"
    run = fresh.experiment
    try:
        assert fresh.version == run.id, f"{adapt}: the version does not read _experiment"
        # a logger pickled for a spawned DDP worker carries _attach_id; the worker (no current run) re-attaches to it
        worker = pickle.loads(pickle.dumps(fresh))
        assert getattr(worker, "_attach_id", None) is not None, f"{adapt}: a pickled logger has no _attach_id"
        offline_wandb.setattr(wandb, "run", None)
        assert worker.experiment.id == run.id, f"{adapt}: a spawned worker's logger starts another run"
    finally:
        run.finish()
