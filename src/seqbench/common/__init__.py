"""What every layer shares, importing nothing else of seqbench: the user's mistakes (errors), atomic file writes (io),
dotted-key lookups (nested), the special token ids (tokens), word counts and length buckets (text), the schema of a
structured corpus's per-pair columns (structure), evenly spread subsets (subset), and the one door to Lightning's
internals (lightning_adapter)."""
