"""Scoring detokenised text: sacreBLEU BLEU and chrF, by length and by structure, paired bootstrap (metrics), targeted
agreement scores (targeted), and the one evaluation path every caller goes through (evaluation). Knows nothing of
corpora or models."""
