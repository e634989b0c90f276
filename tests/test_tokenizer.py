from seqbench.common.tokens import BOS_ID, EOS_ID, PAD_ID, UNK_ID
from seqbench.data.tokenizer import TokenizerPair

TEXTS = ["the cat sat on the mat.", "Ein Hund bellt laut!", "naïve café — 42 ½", "  double  spaces kept? no"]


def test_special_ids_and_round_trip(tmp_path):
    pair = TokenizerPair.load_or_train(tmp_path, lambda: (TEXTS * 20, TEXTS * 20), vocab_size=120, shared=False)
    for tok in (pair.src, pair.tgt):
        assert [tok.token_to_id(t) for t in ("<pad>", "<bos>", "<eos>", "<unk>")] == [PAD_ID, BOS_ID, EOS_ID, UNK_ID]
    ids = pair.encode_tgt(TEXTS[:3])
    assert pair.decode_tgt(ids) == TEXTS[:3]


def test_cached_tokenizer_is_reused(tmp_path):
    a = TokenizerPair.load_or_train(tmp_path, lambda: (TEXTS * 5, TEXTS * 5), vocab_size=80, shared=True)
    assert a.shared and a.src_vocab_size == a.tgt_vocab_size
    files = [f for f in tmp_path.rglob("*.json") if not f.name.endswith(".sha256.json")]  # the cache's seal aside
    assert len(files) == 1
    mtime = files[0].stat().st_mtime_ns
    b = TokenizerPair.load_or_train(tmp_path, lambda: (["other"], ["other"]), vocab_size=80, shared=True)
    assert files[0].stat().st_mtime_ns == mtime and b.encode_src(TEXTS) == a.encode_src(TEXTS)
