"""The structure a structured corpus records beside each pair's texts, and the markers its dependencies carry:
written by seqbench.data.synthetic, read by seqbench.scoring.targeted, so that neither imports the other."""

# The per-pair columns beside src/tgt (seqbench.data.synthetic.SentenceGenerator.pair)
STRUCTURE_COLUMNS = ("clauses", "max_dependency", "dependencies")

# Agreement suffixes indexed by (gender, plural). Adjectives and verbs use different sets.
ADJ_AGREEMENT = {(0, False): "a", (1, False): "o", (2, False): "u", (0, True): "an", (1, True): "on", (2, True): "un"}
VERB_AGREEMENT = {(0, False): "ek", (1, False): "ot", (2, False): "ul",
                  (0, True): "ekta", (1, True): "otta", (2, True): "ulla"}

# Upper edges (source words between controller and dependent) of the distance buckets 1-5, 6-10, ..., 41-60, 61+
DISTANCE_EDGES = (5, 10, 20, 30, 40, 60)

# The markers a targeted evaluation looks for, by dependency kind
MARKERS = {"agreement": frozenset(VERB_AGREEMENT.values()), "reference": frozenset(ADJ_AGREEMENT.values())}
