"""The frameworks' internals seqbench still reaches, each in one module (its adapter), each pinned here: an upgrade that
removes or changes one fails with a message naming the module to adapt, instead of breaking silently (issue 52)."""
from __future__ import annotations

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
