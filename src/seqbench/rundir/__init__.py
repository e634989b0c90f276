"""The run directory, the one interface between training and everything after it: its layout (layout), the versioned
results.json record (results), checkpoints (checkpoints) and their average (averaging), rebuilding a model from a run
or an export (loading), writing an export with its model card (export, model_card) and reading finished runs
(reader)."""
