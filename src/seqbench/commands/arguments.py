"""The argument parser of every command: its mistakes are one line like every other mistake, and its help gives each
default once."""
from __future__ import annotations

import argparse

from seqbench.common.errors import InputError


class _DefaultsOnce(argparse.HelpFormatter):
    """Each option's default in its help once: added where the help does not already say its default, and not for
    options without one (argparse's ArgumentDefaultsHelpFormatter adds "(default: None)" beside our own words)."""

    def _get_help_string(self, action):
        text = action.help or ""
        if "default" in text or action.default in (None, argparse.SUPPRESS) or not action.option_strings \
                or isinstance(action.default, bool):
            return text
        return f"{text} (default: %(default)s)"


class ArgumentParser(argparse.ArgumentParser):
    """argparse for every command, whose mistakes are one line like every other mistake: `error: seqbench bench:
    argument --threads: ... (seqbench bench --help)` and exit status 2, instead of the usage block. Help texts give
    each default once (_DefaultsOnce)."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("formatter_class", _DefaultsOnce)
        super().__init__(*args, **kwargs)

    def error(self, message: str):
        raise InputError(f"{self.prog}: {message} (see {self.prog} --help)")
