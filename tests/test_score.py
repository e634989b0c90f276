"""`seqbench score` reproduces a trained run's own scores from the files the run left behind."""
from __future__ import annotations

import json

from seqbench.rundir.layout import RunDir
from seqbench.rundir.results import read_results

from conftest import seqbench_cli


def test_score_reproduces_the_runs_own_scores(trained_run, capsys):
    run, results = RunDir(trained_run), read_results(trained_run)
    buckets = ",".join(str(edge) for edge in results["config"]["measure"]["length_buckets"])
    for split in ("valid", "test"):
        status, out, err = seqbench_cli(["score", "--hyp", str(run.text("hypotheses", split)),
                                         "--ref", str(run.text("references", split)),
                                         "--src", str(run.text("sources", split)), "--buckets", buckets, "--json"],
                                        capsys)
        assert status == 0, err
        record = json.loads(out)
        # every number, signature and bucket, exactly (the structure scores need the corpus's per-sentence columns,
        # which plain text files do not carry)
        assert set(record) >= {"bleu", "chrf", "bleu_by_length"}
        assert record == {key: results[split][key] for key in record}
