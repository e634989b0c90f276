"""Experiment loggers beyond Lightning's own: Weights & Biases (wandb_logger), a CSV logger that a resumed run
appends to (csv_logger), and what every run shows its W&B and TensorBoard loggers besides scalars (media)."""
