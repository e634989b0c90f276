"""What every layer shares, importing nothing else of seqbench: the user's mistakes (errors), atomic file writes (io),
dotted-key lookups (nested), the special token ids (tokens), word counts and length buckets (text), the schema of a
structured corpus's per-pair columns (structure) and evenly spread subsets (subset)."""
