import sacrebleu

from seqbench.scoring.metrics import corpus_bleu, corpus_chrf


def test_bleu_equals_sacrebleu():
    hyps = ["the cat sat on the mat.", "a dog barked loudly", "hello there"]
    refs = ["the cat sat on a mat.", "the dog barked loudly", "hello there!"]
    score, signature = corpus_bleu(hyps, refs)
    assert score == sacrebleu.corpus_bleu(hyps, [refs]).score
    assert "tok:13a" in signature and "nrefs:1" in signature
    assert corpus_chrf(hyps, refs)[0] == sacrebleu.corpus_chrf(hyps, [refs]).score
