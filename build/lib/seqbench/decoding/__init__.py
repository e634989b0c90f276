"""Decoding any `Seq2Seq` model: greedy and beam search (search), and attention maps of a decoded sentence
(attention)."""
