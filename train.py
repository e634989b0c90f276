"""Train, evaluate and record one run: `python train.py model=transformer trainer.max_epochs=5`.

Composition lives in conf/, the work in seqbench.run; this file only turns config and input errors into one line.
"""
import sys
from pathlib import Path

import hydra
from omegaconf import DictConfig

from seqbench.config_check import check_group_choices
from seqbench.errors import ConfigError, user_error
from seqbench.hydra_resolvers import register_resolvers

register_resolvers()


@hydra.main(version_base="1.3", config_path="conf", config_name="train")
def main(cfg: DictConfig) -> float | None:
    from seqbench.run import run  # after composition: a bad override fails before the heavy imports

    try:
        results = run(cfg)
    except Exception as error:  # noqa: BLE001 - only the user's own mistakes become one line; the rest re-raises
        cause = user_error(error)
        if cause is None:
            raise
        print(f"error: {cause}", file=sys.stderr)
        sys.exit(2)
    return results.get("valid", {}).get("bleu")  # the value Hydra sweepers optimise


if __name__ == "__main__":
    try:
        check_group_choices(sys.argv[1:], str(Path(__file__).parent / "conf"))
    except ConfigError as error:
        print(f"error: {error}", file=sys.stderr)
        sys.exit(2)
    main()
