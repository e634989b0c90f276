"""seqbench.decoding.ctranslate2 and `export --format ctranslate2` / `translate --engine ctranslate2`: a converted
Transformer decodes in CTranslate2 as it does in seqbench (greedy token for token, beam within 0.1 BLEU), for every
layout the converter accepts; what it cannot convert is refused in one line. Runs when CTranslate2 is installed (the
dev extra installs it)."""
from __future__ import annotations

import pytest
import sacrebleu
import torch

from seqbench.decoding.ctranslate2 import Engine, convert, numbered_vocabulary, vocabulary
from seqbench.decoding.search import DecodingConfig, generate
from seqbench.rundir.layout import RunDir

from conftest import SRC_VOCAB, TGT_VOCAB, build_tiny_model, seqbench_cli

pytest.importorskip("ctranslate2")


SRC_TOKENS, TGT_TOKENS = numbered_vocabulary(SRC_VOCAB), numbered_vocabulary(TGT_VOCAB)


def _sources(n: int = 24, seed: int = 0) -> list[list[int]]:
    g = torch.Generator().manual_seed(seed)
    return [torch.randint(4, SRC_VOCAB, (int(length),), generator=g).tolist()
            for length in torch.randint(1, 12, (n,), generator=g)]


def _seqbench(model, sources, cfg):
    from seqbench.data.batching import collate

    batch = collate([(i, s, []) for i, s in enumerate(sources)])
    return generate(model, batch["src"], batch["src_mask"], cfg)


# post-LN with sinusoidal positions and tied output (the paper's layout); pre-LN, learned positions, separate output
# embedding; encoder and decoder of different depths
@pytest.mark.parametrize("case, overrides", [("transformer", {}), ("transformer_preln_learned", {}),
                                             ("transformer", {"encoder_layers": 3, "decoder_layers": 1})])
def test_a_converted_model_decodes_as_seqbench_does(tmp_path, case, overrides):
    model = build_tiny_model(case, **overrides)
    convert(model, SRC_TOKENS, TGT_TOKENS, tmp_path / "ct2")
    engine = Engine(tmp_path / "ct2", SRC_TOKENS, TGT_TOKENS, threads=1)
    sources = _sources()
    greedy = DecodingConfig(beam_size=1, max_len_a=1.0, max_len_b=3)
    assert engine.generate(sources, greedy) == _seqbench(model, sources, greedy)
    forced = DecodingConfig(beam_size=1, min_len=7, max_len=7)  # the bench's forced-length decoding
    assert all(len(h) == 7 for h in engine.generate(sources, forced))
    # Beam search is compared by BLEU on a trained run (below), not token for token here: on an untrained model most
    # hypotheses reach the length limit, where seqbench scores the forced <eos> and CTranslate2 truncates, and the
    # two searches keep finished hypotheses differently, which near-uniform distributions expose.


def test_a_model_that_translates_scores_the_same_in_both_engines(tmp_path):
    """The Transformer that memorises 64 pairs (test_overfit): CTranslate2's greedy hypotheses equal seqbench's
    token for token, and its beam-4 hypotheses score the same BLEU within 0.1."""
    from test_overfit import memorise

    module, datamodule = memorise("transformer", tmp_path)
    model, tokenizers = module.model.eval(), datamodule.tokenizers
    convert(model, vocabulary(tokenizers.src), vocabulary(tokenizers.tgt), tmp_path / "ct2")
    engine = Engine.for_tokenizers(tmp_path / "ct2", tokenizers, threads=1)
    test = datamodule.text["test"]
    sources = tokenizers.encode_src(list(test["src"]))
    greedy, beam = DecodingConfig(beam_size=1), DecodingConfig(beam_size=4, length_penalty=0.6)
    assert engine.generate(sources, greedy) == _seqbench(model, sources, greedy)

    def bleu(hypotheses: list[list[int]]) -> float:
        return sacrebleu.corpus_bleu(tokenizers.decode_tgt(hypotheses), [list(test["tgt"])]).score

    ours, theirs = bleu(_seqbench(model, sources, beam)), bleu(engine.generate(sources, beam))
    assert ours >= 95 and abs(ours - theirs) <= 0.1


def test_what_cannot_convert_is_refused_in_one_line(tmp_path):
    from seqbench.common.errors import InputError

    for case, words in (("rnn_bahdanau", "only Transformer models"), ("cnn", "only Transformer models"),
                        ("transformer_rope", "rotary positions")):
        with pytest.raises(InputError, match=words):
            convert(build_tiny_model(case), SRC_TOKENS, TGT_TOKENS, tmp_path / case)
    with pytest.raises(InputError, match="--quantization int3"):
        convert(build_tiny_model("transformer"), SRC_TOKENS, TGT_TOKENS, tmp_path / "q", quantization="int3")


def test_export_then_translate_with_ctranslate2_reproduces_the_run(trained_run, tmp_path, capsys):
    """The shared tiny run exported with --format ctranslate2 and translated as a user would: CTranslate2's greedy
    translations of the test sources equal seqbench's; its beam translations score the same BLEU within 0.1 (this
    4-update run barely translates: the memorised model above is the test that bites); int8 also decodes."""
    out = tmp_path / "exported"
    status, _, err = seqbench_cli(["export", str(trained_run), str(out), "--format", "ctranslate2"], capsys)
    assert status == 0 and "--engine ctranslate2" in err
    assert (RunDir(out).ctranslate2 / "model.bin").is_file() and RunDir(out).weights.is_file()
    run = RunDir(trained_run)
    sources, references = (run.text(name, "test").read_text().splitlines() for name in ("sources", "references"))

    def translate(*options: str) -> list[str]:
        target = tmp_path / f"hyp{len(list(tmp_path.glob('hyp*')))}.txt"
        argv = ["translate", str(out), "--input", str(run.text("sources", "test")), "--output", str(target)]
        assert seqbench_cli([*argv, *options], capsys)[0] == 0
        return target.read_text().splitlines()

    assert translate("--engine", "ctranslate2", "--beam", "1") == translate("--beam", "1")
    ours, theirs = translate(), translate("--engine", "ctranslate2")
    assert len(theirs) == len(sources)
    assert abs(sacrebleu.corpus_bleu(theirs, [references]).score
               - sacrebleu.corpus_bleu(ours, [references]).score) <= 0.1

    quantized = tmp_path / "int8"
    assert seqbench_cli(["export", str(trained_run), str(quantized), "--format", "ctranslate2",
                         "--quantization", "int8"], capsys)[0] == 0
    assert seqbench_cli(["translate", str(quantized), "--engine", "ctranslate2", "--input",
                         str(run.text("sources", "test")), "--output", str(tmp_path / "int8.txt")], capsys)[0] == 0
    assert len((tmp_path / "int8.txt").read_text().splitlines()) == len(sources)


def test_engine_and_format_mistakes_are_one_line(trained_run, tmp_path, capsys):
    plain = tmp_path / "plain"
    assert seqbench_cli(["export", str(trained_run), str(plain)], capsys)[0] == 0
    status, _, err = seqbench_cli(["translate", str(plain), "--engine", "ctranslate2"], capsys)
    assert status == 2 and err.count("\n") == 1 and "--format ctranslate2" in err
    status, _, err = seqbench_cli(["export", str(trained_run), str(tmp_path / "q"), "--quantization", "int8"], capsys)
    assert status == 2 and "--quantization applies to --format ctranslate2" in err
    assert not (tmp_path / "q").exists()
