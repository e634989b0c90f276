"""Synthetic run directories for the report tests: results.json (schema 1), test-set text
files, a CSV log and attention maps, written the way seqbench.training.run writes them, without training anything."""
from __future__ import annotations

import csv
import json
import random
from pathlib import Path

import torch

from seqbench.decoding.attention import save_attention
from seqbench.rundir.layout import RunDir
from seqbench.rundir.results import write_results
from seqbench.scoring.evaluation import Evaluator

# label -> (family, share of reference words each model gets right, attention shape [L, H] or None)
MODELS = {"transformer": ("transformer", 0.9, (2, 2)), "rnnsearch": ("rnn", 0.7, (1, 1)),
          "rnnencdec": ("rnn", 0.4, None)}
WORDS = "the a cat dog sat ran on under mat house big small red blue quickly slowly".split()


def _test_set(n: int, rng: random.Random) -> tuple[list[str], list[str]]:
    sources = [" ".join(rng.choices(WORDS, k=rng.randint(3, 70))) for _ in range(n)]
    references = [" ".join(reversed(s.split())) for s in sources]
    return sources, references


def _hypothesis(reference: str, accuracy: float, rng: random.Random) -> str:
    return " ".join(w if rng.random() < accuracy else rng.choice(WORDS) for w in reference.split())


def make_run(run_dir: Path, label: str, seed: int, sources: list[str], references: list[str]) -> Path:
    family, accuracy, heads = MODELS[label]
    rng = random.Random(f"{label}-{seed}")
    accuracy = min(1.0, accuracy + rng.uniform(-0.03, 0.03))
    run_dir.mkdir(parents=True)
    hypotheses = [_hypothesis(r, accuracy, rng) for r in references]
    test = Evaluator().score(hypotheses, references, sources)
    RunDir(run_dir).write_texts("test", {"hypotheses": hypotheses, "references": references, "sources": sources})
    speed = {"transformer": 3.0, "rnn": 1.0}[family] * rng.uniform(0.9, 1.1)
    results = {
        "label": label, "model": {"name": family, "class": "x", "config": {}, "param_budget": None},
        "parameters": {"transformer": 1_000_000, "rnn": 950_000}[family], "seed": seed,
        "valid": dict(test), "test": test,
        "throughput": {"target_tokens_per_s": 10_000 * speed, "steps_per_s": 5 * speed, "measured_steps": 100},
        "decoding": {"greedy": {"beam_size": 1, "sentences_per_s": 50 * speed},
                     "beam": {"beam_size": 4, "sentences_per_s": 20 * speed}},
        "flops": {"mfu": 0.05 * speed}, "memory": {"cpu_rss_peak_mb": 900.0, "cuda_max_allocated_mb": None},
        "peak_memory_mb": 900.0 + 10 * seed,
    }
    write_results(results, run_dir)
    (run_dir / "csv").mkdir()
    with (run_dir / "csv" / "metrics.csv").open("w", newline="") as f:
        writer = csv.DictWriter(f, ["epoch", "step", "train/loss", "val/bleu", "val/tokens_seen",
                                    "val/train_seconds"])
        writer.writeheader()
        for step in range(1, 6):
            writer.writerow({"epoch": 0, "step": step * 10, "train/loss": 3.0 / step})
            writer.writerow({"epoch": 0, "step": step * 10, "val/bleu": test["bleu"] * step / 5,
                             "val/tokens_seen": step * 50_000, "val/train_seconds": step * 60 / speed})
        writer.writerow({"epoch": 0, "step": 50, "val/bleu": test["bleu"]})  # the final re-validation: no progress
    examples = []
    for k in range(2):
        src, tgt = sources[k].split()[:8], references[k].split()[:6] + ["<eos>"]
        attention = None if heads is None else torch.softmax(torch.randn(*heads, len(tgt), len(src)), -1)
        examples.append({"index": k, "source": sources[k], "hypothesis": hypotheses[k], "src_tokens": src,
                         "tgt_tokens": tgt, "attention": attention})
    save_attention(RunDir(run_dir).attention, label, family, examples)
    return run_dir


def make_multirun(root: Path, labels=tuple(MODELS), seeds=(1, 2, 3), n_sentences: int = 120) -> Path:
    """A Hydra-multirun-like tree root/<job>/ with one run per (label, seed), all on the same test set."""
    sources, references = _test_set(n_sentences, random.Random(0))
    job = 0
    for label in labels:
        for seed in seeds:
            make_run(root / str(job), label, seed, sources, references)
            job += 1
    (root / "multirun.yaml").write_text(json.dumps({"labels": list(labels)}))
    return root


def make_structured_multirun(root: Path, n_sentences: int = 150) -> Path:
    """Runs on a structured corpus (the synthetic pair with pronoun subjects and long subjects), so results.json
    carries BLEU by clauses and by longest dependency and the targeted coverage and accuracy: "oracle" outputs the
    references, "dropper" drops a quarter of their words (and, decoding greedily, test.greedy, half); two seeds
    each."""
    from seqbench.common.breakdowns import CorpusScoring
    from seqbench.common.structure import STRUCTURE_COLUMNS
    from seqbench.data.synthetic import MARKERS, GrammarConfig, Lexicon, SentenceGenerator

    cfg = GrammarConfig(p_pronoun_subject=0.6, p_long_subject=0.3)
    generator = SentenceGenerator(cfg, Lexicon.build(cfg), random.Random(0))
    rows = [generator.pair() for _ in range(n_sentences)]
    sources, references = [r["src"] for r in rows], [r["tgt"] for r in rows]
    structure = {name: [r[name] for r in rows] for name in STRUCTURE_COLUMNS}
    for job, (label, seed) in enumerate([(m, s) for m in ("oracle", "dropper") for s in (1, 2)]):
        rng = random.Random(f"{label}-{seed}")
        hypotheses = references if label == "oracle" else [
            " ".join(w for w in r.split() if rng.random() > 0.25) for r in references]
        run_dir = root / str(job)
        run_dir.mkdir(parents=True)
        test = Evaluator().score(hypotheses, references, sources, structure=structure,
                                 scoring=CorpusScoring(markers=MARKERS))
        test["greedy"] = Evaluator().score(references if label == "oracle" else [
            " ".join(w for w in r.split() if rng.random() > 0.5) for r in references], references, sources)
        RunDir(run_dir).write_texts("test", {"hypotheses": hypotheses, "references": references, "sources": sources})
        write_results({"label": label, "model": {"name": "rnn", "class": "x", "config": {}, "param_budget": None},
                       "parameters": 1000, "seed": seed, "test": test}, run_dir)
    return root
