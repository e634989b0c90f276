"""The frameworks' internals seqbench still reaches, each in one module (its adapter), each pinned here: an upgrade that
removes or changes one fails with a message naming the module to adapt, instead of breaking silently (issue 52)."""
from __future__ import annotations

import contextlib
import pickle
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F


@contextlib.contextmanager
def _naming(adapt: str):
    """Fails with `adapt` on an attribute or key the framework no longer has (rather than with the bare error)."""
    try:
        yield
    except (AttributeError, KeyError) as error:
        pytest.fail(f"{adapt}: {type(error).__name__}: {error}")


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


def test_lightnings_fit_loop_builds_again_the_train_loader_common_lightning_adapter_drops(tmp_path):
    """What ResumeState needs: a train loader built before fit starts (configure_optimizers asking for
    trainer.estimated_stepping_batches builds one) and dropped at on_fit_start is built again for the first epoch."""
    import lightning as L
    from torch.utils.data import DataLoader, TensorDataset

    from seqbench.common.lightning_adapter import drop_built_train_loader

    adapt = (f"lightning {L.__version__}: adapt seqbench.common.lightning_adapter.drop_built_train_loader, the one "
             f"function that clears the fit loop's _combined_loader (ResumeState calls it so that a run resumed "
             f"mid-epoch starts at its batch)")

    class Data(L.LightningDataModule):
        built = 0

        def train_dataloader(self):  # the n-th loader built yields n
            self.built += 1
            return DataLoader(TensorDataset(torch.full((4, 1), float(self.built))), batch_size=2)

    class Model(L.LightningModule):
        def __init__(self):
            super().__init__()
            self.layer, self.seen = torch.nn.Linear(1, 1), []

        def training_step(self, batch, batch_idx):
            self.seen.append(batch[0][0, 0].item())
            return self.layer(batch[0]).sum()

        def configure_optimizers(self):
            assert self.trainer.estimated_stepping_batches == 2  # builds the train loader, as seqbench's schedules do
            return torch.optim.SGD(self.parameters(), lr=0.1)

    class Drop(L.Callback):
        def on_fit_start(self, trainer, pl_module):
            self.built_before = trainer.datamodule.built
            drop_built_train_loader(trainer)

    data, model, drop = Data(), Model(), Drop()
    trainer = L.Trainer(max_epochs=1, accelerator="cpu", devices=1, logger=False, enable_checkpointing=False,
                        enable_progress_bar=False, enable_model_summary=False, callbacks=[drop],
                        default_root_dir=tmp_path)
    with _naming(adapt):
        trainer.fit(model, datamodule=data)
    assert model.seen and model.seen[0] > drop.built_before, \
        f"{adapt}: the first epoch used the loader built before fit started ({data.built} built)"


def test_lightnings_loggers_log_at_the_step_common_lightning_adapter_sets(tmp_path):
    import csv

    import lightning as L
    from lightning.pytorch.loggers import CSVLogger
    from torch.utils.data import DataLoader, TensorDataset

    from seqbench.common.lightning_adapter import set_logging_step

    adapt = (f"lightning {L.__version__}: adapt seqbench.common.lightning_adapter.set_logging_step, the one function "
             f"that sets the step Lightning logs at (ResumeState corrects it after a restart at an epoch's end)")

    class Model(L.LightningModule):
        def __init__(self):
            super().__init__()
            self.layer = torch.nn.Linear(1, 1)

        def training_step(self, batch, batch_idx):
            loss = self.layer(batch[0]).sum()
            self.log("loss", loss)
            return loss

        def on_train_epoch_start(self):
            if self.current_epoch == 1:
                set_logging_step(self.trainer, 100)

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=0.1)

    logger = CSVLogger(tmp_path, name="", version="")
    trainer = L.Trainer(max_epochs=2, accelerator="cpu", devices=1, logger=logger, log_every_n_steps=1,
                        enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False,
                        default_root_dir=tmp_path)
    trainer.fit(Model(), DataLoader(TensorDataset(torch.ones(4, 1)), batch_size=2))
    with open(Path(logger.log_dir) / "metrics.csv", newline="") as f:
        steps = [int(row["step"]) for row in csv.DictReader(f) if row.get("loss")]
    assert steps == [0, 1, 100, 101], f"{adapt}: logged at steps {steps}"


@pytest.fixture
def offline_wandb(wandb_env, tmp_path):
    """W&B offline, on a machine without its credentials or settings (an empty home), writing under tmp_path."""
    import wandb

    wandb_env.setenv("WANDB_MODE", "offline")
    wandb_env.chdir(tmp_path)
    wandb.teardown()  # re-read with the mode set
    yield wandb_env


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


def test_lightnings_wandb_logger_keeps_the_state_common_lightning_adapter_sets_and_reads(offline_wandb, tmp_path):
    import lightning as L
    import wandb
    from lightning.pytorch.loggers import WandbLogger as LightningWandbLogger

    from seqbench.common import lightning_adapter as adapter
    from seqbench.loggers.wandb_logger import WandbLogger

    adapt = (f"lightning {L.__version__}, wandb {wandb.__version__}: adapt seqbench.common.lightning_adapter "
             f"(wandb_init_args, set_wandb_run_id, wandb_run, set_wandb_run, reattaches_wandb_run), the one module "
             f"that sets and reads Lightning's WandbLogger attributes (for seqbench.loggers.wandb_logger.WandbLogger)")
    with _naming(adapt):  # an attribute gone fails with the message too
        resumed = WandbLogger(project="seqbench", save_dir=str(tmp_path / "resumed"), group="g")
        init = adapter.wandb_init_args(resumed)
        expected = {"project": "seqbench", "dir": str(tmp_path / "resumed"), "id": None, "resume": "allow",
                    "group": "g"}
        assert isinstance(init, dict) and expected.items() <= init.items(), \
            f"{adapt}: _wandb_init is {init!r}, not the wandb.init arguments the constructor was given"
        (tmp_path / "resumed" / "wandb" / "offline-run-20260101_000000-pinned01").mkdir(parents=True)
        resumed.resume_from(10)  # set_wandb_run_id
        assert (init["id"], resumed.version) == ("pinned01", "pinned01"), f"{adapt}: the version does not read _id"

        given = LightningWandbLogger(project="seqbench", save_dir=str(tmp_path / "given"))
        assert adapter.wandb_run(given) is None, f"{adapt}: no _experiment slot before the run starts"
        adapter.set_wandb_run(given, given_run := type("Run", (), {"id": "given01", "name": "given"})())
        assert given.experiment is given_run and given.version == "given01", \
            f"{adapt}: the logger ignores a run set in it"

        fresh = WandbLogger(project="seqbench", save_dir=str(tmp_path / "fresh"))
        assert not adapter.reattaches_wandb_run(fresh), f"{adapt}: a new logger reads as a spawned worker's"
        run = fresh.experiment
        try:
            assert adapter.wandb_run(fresh) is run and fresh.version == run.id, \
                f"{adapt}: the run started is not the logger's _experiment"
            # a logger pickled for a spawned DDP worker carries _attach_id; the worker (no current run) re-attaches
            worker = pickle.loads(pickle.dumps(fresh))
            assert adapter.reattaches_wandb_run(worker), f"{adapt}: a pickled logger has no _attach_id"
            offline_wandb.setattr(wandb, "run", None)
            assert worker.experiment.id == run.id, f"{adapt}: a spawned worker's logger starts another run"
        finally:
            run.finish()


def test_lightnings_csv_writer_takes_back_the_rows_loggers_csv_logger_keeps(tmp_path):
    """A run resumed from update 4 of 6 ends with the metrics.csv of one that was never stopped."""
    import lightning as L

    from seqbench.loggers.csv_logger import ResumableCSVLogger

    adapt = (f"lightning {L.__version__}: adapt seqbench.loggers.csv_logger.ResumableCSVLogger, which gives the rows "
             f"logged before a resume back to CSVLogger's experiment writer (log_metrics, save)")

    def log(logger, steps):
        for step in steps:  # a validation every 3 updates: a row of other columns at the same step
            logger.log_metrics({"train/loss": 1 / (step + 1), "epoch": step // 3}, step=step)
            if step % 3 == 1:
                logger.log_metrics({"val/nll": step / 7, "epoch": step // 3}, step=step)
        logger.save()

    log(uninterrupted := ResumableCSVLogger(tmp_path / "uninterrupted", name="csv", version=""), range(6))
    stopped = ResumableCSVLogger(tmp_path / "resumed", name="csv", version="")
    log(stopped, range(5))  # stopped after update 5; its last checkpoint is update 4's
    stopped.log_hyperparams({"lr": 0.1})
    resumed = ResumableCSVLogger(tmp_path / "resumed", name="csv", version="")
    resumed.resume_from(4)
    with _naming(adapt):
        log(resumed, range(4, 6))
    expected = (Path(uninterrupted.log_dir) / "metrics.csv").read_text()
    assert (Path(resumed.log_dir) / "metrics.csv").read_text() == expected, f"{adapt}: metrics.csv differs"
