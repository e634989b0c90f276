"""The one place that knows which warnings of the pinned third-party versions say nothing to a seqbench user.

Each filter names the version it was seen with (pyproject.toml's floors and the versions .ci installs): when an
upgrade fixes the cause, its filter goes; a new warning of a new version is seen first, then decided here.
"""
from __future__ import annotations

import warnings

# (message regex, category, module regex of the line that warns, seen with)
KNOWN = [
    # lightning 2.6.6 with torch 2.13: Lightning's own pytree helper builds torch's deprecated LeafSpec
    (r"`isinstance\(treespec, LeafSpec\)` is deprecated", FutureWarning, r"lightning\.pytorch\.utilities\._pytree",
     "lightning 2.6.6, torch 2.13.0"),
]


def silence_known_warnings() -> None:
    """Installs the filters of KNOWN (called once, at the start of every `seqbench` command and DDP rank)."""
    for message, category, module, _seen_with in KNOWN:
        warnings.filterwarnings("ignore", message=message, category=category, module=module)
