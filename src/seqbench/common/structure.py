"""The structure a structured corpus records beside each pair's texts: written by the corpora of seqbench.data that
generate their pairs, read by seqbench.scoring.targeted, so that neither imports the other. The markers a corpus's
dependencies carry are the corpus's own (its `scoring.markers`, seqbench.common.breakdowns)."""

# The per-pair columns beside src/tgt
STRUCTURE_COLUMNS = ("clauses", "max_dependency", "dependencies")

# Upper edges (source words between controller and dependent) of the distance buckets 1-5, 6-10, ..., 41-60, 61+
DISTANCE_EDGES = (5, 10, 20, 30, 40, 60)
