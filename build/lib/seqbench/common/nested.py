"""Dotted-key access into nested mappings (dicts, results.json, OmegaConf DictConfig): one helper for all."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def lookup(tree: Any, path: str) -> tuple[bool, Any]:
    """(whether "a.b.c" exists in the nested mappings, its value); an explicit None is present."""
    node = tree
    for key in path.split("."):
        if not isinstance(node, Mapping) or key not in node:
            return False, None
        node = node[key]
    return True, node


def get_path(tree: Any, path: str, default: Any = None) -> Any:
    """tree["a"]["b"]["c"] for path "a.b.c"; `default` when a level is missing, not a mapping, or None."""
    present, value = lookup(tree, path)
    return value if present and value is not None else default
