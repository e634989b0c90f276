"""W&B sweep files run without a W&B server: `seqbench sweep sweeps/<file>.yaml [--count N] [--out DIR]`.

seqbench.sweep.spec reads a sweep file and checks it against W&B's schema and translates it into an Optuna study;
seqbench.sweep.runner runs its trials as `train.py` subprocesses with the arguments `wandb agent` would pass, and
writes summary.md / summary.csv / summary.json into the sweep directory; `seqbench report <sweep dir>`
plots it. seqbench.sweep.launcher runs one trial, for the runner and for the successive-halving search
(seqbench.sweep.halving) alike.
"""
