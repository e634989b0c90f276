"""bf16-mixed against 32-true training on the CPU: the seed-level test of docs/speed.md, from the committed records.

Each run: `python train.py trainer.max_steps=1000 trainer.precision=<P> seed=<S> threads=1` (the quickstart's recipe
and data, commit 2f895b9), one folder per run here (<P>-seed<S>). Run from the repository root:
    python docs/results/precision/compare.py
"""
import json
from pathlib import Path

from seqbench.analysis.seeds import compare_seeds, spread

HERE = Path(__file__).parent


def scores(precision: str, split: str) -> dict[int, float]:
    """{seed: BLEU} of the runs that completed their 1,000 updates (a run cut by the wall-clock guard is left out)."""
    found = {}
    for path in sorted(HERE.glob(f"{precision}-seed*/results.json")):
        results = json.loads(path.read_text())
        train = results.get("train", {})
        if results.get("status") != "completed" or train.get("steps") != train.get("max_steps"):
            print(f"left out: {path.parent.name} ({train.get('steps')} of {train.get('max_steps')} updates, "
                  f"stopped by {train.get('stopped_by')})")
            continue
        found[int(path.parent.name.rsplit("seed", 1)[1])] = results[split]["bleu"]
    return found


for split in ("valid", "test"):
    bf16, fp32 = scores("bf16-mixed", split), scores("32-true", split)
    print(f"{split}: bf16-mixed {', '.join(f'seed {s} {b:.2f}' for s, b in bf16.items())}; "
          f"32-true {', '.join(f'seed {s} {b:.2f}' for s, b in fp32.items())}")
    a, b = spread(list(bf16.values())), spread(list(fp32.values()))
    print(f"  means: bf16-mixed {a.mean:.2f}, 32-true {b.mean:.2f} ({a.n} and {b.n} seeds)")
    if a.n >= 2 and b.n >= 2:
        test = compare_seeds(list(bf16.values()), list(fp32.values()))
        low, high = test.ci if test.ci else (float("nan"), float("nan"))
        print(f"  bf16 - fp32: {test.difference:+.2f} BLEU, Welch 95% CI [{low:+.2f}, {high:+.2f}], Welch p "
              f"{test.welch_p:.3f}, permutation p {test.permutation_p:.3f} (floor {test.p_floor:.3f})")
