"""seqbench.scoring.evaluation.Evaluator (the one scoring path) and `seqbench score` on hand-made files."""
from __future__ import annotations

import json

import pytest
import sacrebleu

from seqbench.commands.score import main
from seqbench.common.breakdowns import CorpusScoring, Subset
from seqbench.common.io import read_lines
from seqbench.data.synthetic import MARKERS
from seqbench.rundir.layout import RunDir
from seqbench.scoring.evaluation import Evaluator
from seqbench.scoring.metrics import bleu_by_length, corpus_bleu, corpus_chrf

from conftest import seqbench_cli

SOURCES = ["a b c", "d e f g h i j k l m n o", "p q", "r s t u v w x y z a b c d e f g h i j k l m n"]
REFERENCES = ["the cat sat on the mat", "a dog barked at the moon tonight", "hello there", "it rains a lot today"]
HYPOTHESES = ["the cat sat on a mat", "the dog barked at a moon", "", "it rains a lot today"]
BASELINE = ["a cat sat", "dog moon", "hello", "it rains"]


def test_score_is_the_metrics_of_seqbench_metrics():
    scores = Evaluator([5, 15]).score(HYPOTHESES, REFERENCES, SOURCES)
    assert (scores["bleu"], scores["bleu_signature"]) == corpus_bleu(HYPOTHESES, REFERENCES)
    assert (scores["chrf"], scores["chrf_signature"]) == corpus_chrf(HYPOTHESES, REFERENCES)
    assert scores["bleu"] == sacrebleu.corpus_bleu(HYPOTHESES, [REFERENCES]).score
    assert scores["n_sentences"] == 4
    assert scores["bleu_by_length"] == bleu_by_length(HYPOTHESES, REFERENCES, [3, 12, 2, 24], [5, 15])
    assert [b["sentences"] for b in scores["bleu_by_length"]] == [2, 1, 1]
    # results.json's key order and nothing else when neither sources nor a baseline is given
    assert list(Evaluator().score(HYPOTHESES, REFERENCES)) == ["bleu", "bleu_signature", "chrf", "chrf_signature",
                                                                "n_sentences"]


def test_baseline_adds_its_scores_and_the_paired_test():
    scores = Evaluator(bootstrap_samples=100).score(HYPOTHESES, REFERENCES, SOURCES, baseline=BASELINE)
    assert scores["baseline"] == Evaluator().score(BASELINE, REFERENCES, SOURCES)
    test = scores["significance"]  # this system against the baseline, not the other way round
    assert test["baseline_bleu"] == sacrebleu.corpus_bleu(BASELINE, [REFERENCES]).score
    assert test["bleu"] == sacrebleu.corpus_bleu(HYPOTHESES, [REFERENCES]).score > test["baseline_bleu"]
    assert 0 < test["p_value"] <= 1 and test["ci"] > 0


def test_mismatched_lengths_and_bad_buckets_are_errors():
    with pytest.raises(ValueError, match="3 references"):
        Evaluator().score(HYPOTHESES, REFERENCES[:3])
    with pytest.raises(ValueError, match="sources"):
        Evaluator().score(HYPOTHESES, REFERENCES, SOURCES[:1])
    with pytest.raises(ValueError):
        Evaluator([20, 10])


def test_metric_names_are_the_logged_ones():
    scores = Evaluator([5, 15]).score(HYPOTHESES[:3], REFERENCES[:3], SOURCES[:3])
    metrics = Evaluator.metrics("val", scores)
    # the empty 16+ bucket is left out: loggers want numbers
    assert list(metrics) == ["val/bleu", "val/chrf", "val/bleu_len_1-5", "val/bleu_len_6-15"]
    assert metrics["val/bleu"] == scores["bleu"]


def test_written_files_read_back_exactly(tmp_path):
    paths = RunDir(tmp_path).write_texts("test", {"hypotheses": HYPOTHESES, "references": REFERENCES,
                                                  "sources": SOURCES})
    assert [p.name for p in paths] == ["hypotheses.test.txt", "references.test.txt", "sources.test.txt"]
    assert read_lines(RunDir(tmp_path).text("hypotheses", "test")) == HYPOTHESES  # the empty hypothesis included
    assert read_lines(paths[2]) == SOURCES
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(p.name for p in paths)  # no temporary files left


@pytest.fixture
def files(tmp_path):
    out = {}
    for name, lines in (("hyp", HYPOTHESES), ("ref", REFERENCES), ("src", SOURCES), ("base", BASELINE)):
        out[name] = tmp_path / f"{name}.txt"
        out[name].write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return out


def test_score_cli_json_is_the_evaluator_record(files, capsys):
    assert main(["--hyp", str(files["hyp"]), "--ref", str(files["ref"]), "--src", str(files["src"]),
                 "--baseline", str(files["base"]), "--buckets", "5,15", "--bootstrap", "100", "--json"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert record == Evaluator([5, 15], 100).score(HYPOTHESES, REFERENCES, SOURCES, baseline=BASELINE)


def test_score_cli_text_output(files, capsys):
    assert main(["--hyp", str(files["hyp"]), "--ref", str(files["ref"]), "--src", str(files["src"]),
                 "--baseline", str(files["base"]), "--bootstrap", "100"]) == 0
    out = capsys.readouterr().out
    scores = Evaluator().score(HYPOTHESES, REFERENCES, SOURCES)
    assert f"BLEU       {scores['bleu']:.2f}  {scores['bleu_signature']}" in out
    assert f"chrF       {scores['chrf']:.2f}  {scores['chrf_signature']}" in out
    assert "p = " in out and "BLEU by source length" in out and "61+" in out


def _bad_utf8(path):
    path.write_bytes(b"fine\n\xff broken\nfine\nfine\n")
    return path


@pytest.mark.parametrize("args, message", [
    (lambda f, t: ["--hyp", str(t / "missing.txt"), "--ref", str(f["ref"])], "missing.txt: file not found"),
    (lambda f, t: ["--hyp", str(_bad_utf8(t / "bad.txt")), "--ref", str(f["ref"])], "bad.txt:2: invalid UTF-8"),
    (lambda f, t: ["--hyp", str(f["hyp"]), "--ref", str(f["ref"]), "--src", str(f["src"]), "--baseline",
                   str(_short(t))], "--baseline"),
    (lambda f, t: ["--hyp", str(f["hyp"]), "--ref", str(f["ref"]), "--buckets", "20,10"], "--buckets 20,10"),
    (lambda f, t: ["--hyp", str(f["hyp"]), "--ref", str(f["ref"]), "--buckets", "ten"], "--buckets ten"),
])
def test_score_cli_errors_are_one_line(files, tmp_path, capsys, args, message):
    status, _, err = seqbench_cli(["score", *args(files, tmp_path)], capsys)
    assert status == 2
    err = err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and message in err[0], err


def _short(tmp_path):
    path = tmp_path / "short.txt"
    path.write_text("one line\n", encoding="utf-8")
    return path


def test_structured_corpus_adds_structure_scores_and_their_metrics():
    """With the synthetic pair's per-sentence columns the evaluator adds BLEU by clauses and by longest dependency
    and the targeted coverage and accuracy (seqbench.scoring.targeted), and logs them; a Bible split's verse counts
    add BLEU by length of single verses; without them the record is unchanged."""
    import random

    from seqbench.data.synthetic import GrammarConfig, Lexicon, SentenceGenerator

    cfg = GrammarConfig(p_pronoun_subject=0.5, p_long_subject=0.3)
    generator = SentenceGenerator(cfg, Lexicon.build(cfg), random.Random(0))
    rows = [generator.pair() for _ in range(40)]
    references, sources = [r["tgt"] for r in rows], [r["src"] for r in rows]
    structure = {name: [r[name] for r in rows] for name in ("clauses", "max_dependency", "dependencies")}
    scores = Evaluator().score(references, references, sources, structure=structure,
                               scoring=CorpusScoring(markers=MARKERS))
    assert scores["targeted"]["accuracy"] == scores["targeted"]["coverage"] == 100.0
    assert scores["targeted"]["dependencies"] > 40
    assert sum(b["sentences"] for b in scores["bleu_by_clauses"]) == 40
    assert sum(b["sentences"] for b in scores["bleu_by_dependency"]) == 40
    logged = Evaluator.metrics("test", scores)
    assert logged["test/targeted_accuracy"] == logged["test/targeted_coverage"] == 100.0
    assert any(k.startswith("test/bleu_clauses_") for k in logged)
    plain = Evaluator().score(references, references, sources)
    assert "targeted" not in plain and "bleu_by_clauses" not in plain and "breakdowns" not in plain
    verses = [1 + i % 2 for i in range(40)]  # a corpus that declares a subset (as the Bible's joined verses do)
    single = Subset("bleu_by_length_single", "verses", 1, "BLEU by length, single items", "one item each")
    subsets = Evaluator().score(references, references, sources, structure={"verses": verses},
                                scoring=CorpusScoring(subsets=(single,)))
    assert sum(b["sentences"] for b in subsets["bleu_by_length_single"]) == verses.count(1)
    assert subsets["breakdowns"] == [single.describe()] and "targeted" not in subsets
    assert "bleu_by_length_single" not in Evaluator().score(references, references, sources,
                                                             structure={"verses": verses})  # declared, or nothing
