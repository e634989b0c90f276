"""Experiment loggers beyond Lightning's own: Weights & Biases (wandb_logger)."""
