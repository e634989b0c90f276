"""The table docs/speed.md shows from this folder's records: CTranslate2's (and seqbench's) greedy sentences/s per
condition, each round's value (min-max over rounds, and the median), by vocabulary. `python summary.py`."""
import collections
import json
import statistics
from pathlib import Path

HERE = Path(__file__).parent
rows = collections.defaultdict(list)
for path in sorted(HERE.glob("*.jsonl")):
    for line in path.read_text().splitlines():
        r = json.loads(line)
        condition = r.get("condition") or r["order"]
        condition += " + OMP_WAIT_POLICY=PASSIVE" if r.get("omp_wait_policy") else ""
        condition += " + LD_PRELOAD torch's libgomp" if r.get("preload") else ""
        for engine in ("ct2", "seqbench"):
            if r.get(f"{engine}_sent_s"):
                rows[(path.stem, r["vocab"], condition, engine)].append(r[f"{engine}_sent_s"])
print("| record | vocabulary | condition | engine | sentences/s per round | median |")
print("|---|---|---|---|---|---|")
for (record, vocab, condition, engine), values in rows.items():
    print(f"| {record} | {vocab:,} | {condition} | {'CTranslate2' if engine == 'ct2' else 'seqbench'} | "
          f"{' / '.join(f'{v:.0f}' for v in values)} | {statistics.median(values):.0f} |")
