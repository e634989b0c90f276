"""Train, evaluate and record one run: `python train.py model=transformer trainer.max_epochs=5`.

Composition lives in conf/, the work in seqbench.run; this file only turns config and input errors into one line
(seqbench.cli: the project's, Hydra's and Lightning's alike; exit status 2).
"""
import sys
from pathlib import Path

import hydra
from omegaconf import DictConfig

from seqbench.cli import composition_done, exit_if_user_error, run_cli
from seqbench.config_check import ConfigError, check_group_choices
from seqbench.hydra_resolvers import register_resolvers

register_resolvers()


# An absolute config_path: tests call main() in-process, where Hydra would look for a `conf` package instead.
@hydra.main(version_base="1.3", config_path=str(Path(__file__).resolve().parent / "conf"), config_name="train")
def main(cfg: DictConfig) -> float | None:
    composition_done()
    from seqbench.run import run  # after composition: a bad override fails before the heavy imports

    try:
        results = run(cfg)
    except Exception as error:  # noqa: BLE001 - only the user's own mistakes become one line; the rest re-raises
        exit_if_user_error(error)
        raise
    return results.get("valid", {}).get("bleu")  # the value Hydra sweepers optimise


if __name__ == "__main__":
    try:
        check_group_choices(sys.argv[1:], str(Path(__file__).parent / "conf"))
    except ConfigError as error:
        print(f"error: {error}", file=sys.stderr)
        sys.exit(2)
    run_cli(main)
