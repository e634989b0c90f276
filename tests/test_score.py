"""`python -m seqbench.commands.score` reproduces a trained run's own scores from the files the run left behind."""
from __future__ import annotations

import json
import subprocess
import sys

from test_train_cli import TINY, TINY_MODELS, train


def test_score_reproduces_the_runs_own_scores(tmp_path):
    proc = train(tmp_path, *TINY, *TINY_MODELS["transformer"])
    assert proc.returncode == 0, proc.stderr[-3000:]
    run = tmp_path / "run"
    results = json.loads((run / "results.json").read_text())
    buckets = ",".join(str(edge) for edge in results["config"]["measure"]["length_buckets"])
    for split in ("valid", "test"):
        scored = subprocess.run(
            [sys.executable, "-m", "seqbench.commands.score", "--hyp", str(run / f"hypotheses.{split}.txt"),
             "--ref", str(run / f"references.{split}.txt"), "--src", str(run / f"sources.{split}.txt"),
             "--buckets", buckets, "--json"], capture_output=True, text=True, timeout=120)
        assert scored.returncode == 0, scored.stderr
        record = json.loads(scored.stdout)
        # every number, signature and bucket, exactly (the structure scores need the corpus's per-sentence columns,
        # which plain text files do not carry)
        assert set(record) >= {"bleu", "chrf", "bleu_by_length"}
        assert record == {key: results[split][key] for key in record}
