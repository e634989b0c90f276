"""Phase 2: the composed config, checked before any data or model is built or anything is written.

Every problem is a `ConfigError` (or, for a file, an `InputError`) whose message is one line naming the key, the bad
value and what is allowed; `seqbench train` prints it and exits with status 2. The model's own keys are checked by its
family (`validate_config` on the class that `model._target_` names), so a new architecture brings its checks along;
every other key by the typed table of seqbench.config.settings; the machine (devices, writable directories) by
seqbench.config.environment.
"""
from __future__ import annotations

from omegaconf import DictConfig

from seqbench.common.nested import get_path


def validate(cfg: DictConfig, environment: bool = False) -> None:
    """The family's and the settings' checks; with `environment`, also this machine's devices and directories."""
    from seqbench.config.settings import check_settings
    from seqbench.models.interface import family_of  # imports torch: not before a bad override has been reported

    model = get_path(cfg, "model")
    family_of(model).validate_config(model)
    check_settings(cfg)
    if environment:
        from seqbench.config.environment import check_environment

        check_environment(cfg)
