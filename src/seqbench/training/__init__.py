"""Training: the one LightningModule (module), its learning-rate schedules (schedules), Lightning callbacks
(callbacks), the recorded run that `seqbench train` executes (run) and its rooms: which run a rerun is (resume), what
it measures (measurements), its Lightning Trainer (trainer), how it ends when it does not complete (status) and what
it prints (console); and its job in a multirun (jobs)."""
