"""Configuration: where the Hydra configs live and how they are composed (compose, resolvers), and every check of a
user's settings, by phase: the command line (arguments), the composed config before anything is built (composed,
settings, environment) and the config against the prepared data (against_data)."""
