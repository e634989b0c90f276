"""Export a trained model: `seqbench export RUN_DIR OUT/ [--checkpoint best|last|PATH] [--format ctranslate2
[--quantization int8|...]]`.

OUT/ holds what translation needs and nothing from training: the model's weights as safetensors (no optimizer
state, no pickle), the tokenizers, model.json (model config, vocabulary sizes and fingerprint, decoding settings),
the run's config.yaml and results.json, and a model card (README.md) generated from results.json: data, size, BLEU
and chrF with their sacreBLEU signatures, test BLEU by source length, speed and the training command line.
`seqbench translate OUT/` translates with it. `--format ctranslate2` (Transformer runs) adds OUT/ctranslate2/, the
same weights as a CTranslate2 model (seqbench.decoding.ctranslate2), optionally quantised; `seqbench translate OUT/
--engine ctranslate2` decodes with it.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from seqbench.commands.arguments import ArgumentParser
from seqbench.rundir.export import FORMATS, export


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """The command's arguments (one convention for every command: the tests parse the documented commands)."""
    parser = ArgumentParser(prog="seqbench export", description=__doc__.split("\n\n")[0])
    parser.add_argument("run", type=Path, help="run directory (or a .ckpt inside one)")
    parser.add_argument("out", type=Path, help="folder to create (must not exist, or be empty)")
    parser.add_argument("--checkpoint", default="best", help="best, last, or a .ckpt path")
    parser.add_argument("--format", default="seqbench", choices=FORMATS,
                        help="ctranslate2: also write the weights as a CTranslate2 model (Transformer runs)")
    parser.add_argument("--quantization", help="with --format ctranslate2: CTranslate2's weight type, e.g. int8, "
                                               "int8_float32, int16, float16 (default: float32)")
    parser.add_argument("--license", default="mit",
                        help="the model card's license (Hugging Face Hub metadata): MIT, seqbench's, fits its "
                             "synthetic and public-domain corpora; give your data's terms for other corpora")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    out = export(args.run, args.out, args.checkpoint, args.format, args.quantization, args.license)
    engine = " --engine ctranslate2" if args.format == "ctranslate2" else ""
    print(f"exported to {out}: seqbench translate {out}{engine}", file=sys.stderr)
