"""Dotted-key access into nested mappings (dicts, results.json, OmegaConf DictConfig): one helper for all."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def get_path(tree: Any, path: str, default: Any = None) -> Any:
    """tree["a"]["b"]["c"] for path "a.b.c"; `default` when a level is missing, not a mapping, or None."""
    node = tree
    for key in path.split("."):
        if not isinstance(node, Mapping) or key not in node or node[key] is None:
            return default
        node = node[key]
    return node
