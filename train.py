"""`python train.py [Hydra overrides]` is `seqbench train [Hydra overrides]` (seqbench.commands.train): the README's
quickstart, and the program that W&B sweep files and `wandb agent` start."""
import sys

from seqbench.commands import main

if __name__ == "__main__":
    sys.exit(main(["train", *sys.argv[1:]]))
