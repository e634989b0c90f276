#!/bin/bash
# What slows CTranslate2 inside the bench's process (docs/speed.md, "Measured 2026-12-06"). Run from this folder with
# seqbench's environment active and nothing else running; each condition is a process of its own.
set -e
cd "$(dirname "$0")"
W=${WORK:-work}; mkdir -p "$W"
for v in 1000 8000; do [ -d "$W/d$v" ] || python probe.py prepare $v "$W/d$v"; done
G=$(python -c "import os, torch; print(os.path.join(os.path.dirname(torch.__file__), 'lib', 'libgomp.so.1'))")
tag() { sed "s/^{/{\"vocab\": $1, \"round\": $2, /"; }
for round in 1 2 3; do for v in 1000 8000; do   # probe_1_conditions.jsonl (OMP_WAIT_POLICY=PASSIVE last)
  for c in ct2only torch_imported after_torch after_torch_sleep; do python probe.py run "$W/d$v" $c | tag $v $round; done
  OMP_WAIT_POLICY=PASSIVE python probe.py run "$W/d$v" after_torch | tag $v $round
done; done > probe_1_conditions.jsonl
for round in 1 2 3; do for v in 1000 8000; do   # probe_2_preload.jsonl
  python probe.py run "$W/d$v" ct2only | tag $v $round
  LD_PRELOAD=$G python probe.py run "$W/d$v" ct2only | tag $v $round
  for c in torch_imported torch_only after_torch; do python probe.py run "$W/d$v" $c | tag $v $round; done
done; done > probe_2_preload.jsonl
for r in 1 2 3; do for v in 1000 8000; do for o in ct2_only ct2_first torch_first; do python order.py "$W/d$v" $o; done; done; done > order_1.jsonl
for r in 1 2 3; do for o in ct2_only torch_first_threads torch_first_matmul; do python order.py "$W/d1000" $o; done; done > order_2_threads_matmul.jsonl
for v in 1000 8000; do for b in 1 5; do python profile_decode.py $v $b > profile_decode_vocab${v}_beam${b}.txt; done; done
for r in 1 2 3; do for c in ct2only torch_idle torch_imported; do python probe.py run "$W/d1000" $c | tag 1000 $r; done; done > probe_3_idle.jsonl
for f in cnn rnn transformer; do python profile_train.py $f > profile_train_$f.txt; done
