"""The run directory, the one interface between training and everything after it: its layout (layout), the versioned
results.json record (results), checkpoints (checkpoints), rebuilding a model from a run or an export (loading) and
reading finished runs (reader)."""
