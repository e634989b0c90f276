"""The special tokens every vocabulary starts with, and their ids (the same in every tokenizer, model and search)."""

PAD, BOS, EOS, UNK = "<pad>", "<bos>", "<eos>", "<unk>"
SPECIAL_TOKENS = [PAD, BOS, EOS, UNK]  # ids 0..3 in that order, in every vocabulary
PAD_ID, BOS_ID, EOS_ID, UNK_ID = range(4)
