"""Training: the one LightningModule (module), its loss and learning-rate schedules (losses, schedules), Lightning
callbacks (callbacks), how a run ends when it does not complete (status), the recorded run that `seqbench train`
executes (run) and its job in a multirun (jobs)."""
