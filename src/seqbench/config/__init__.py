"""Configuration: where the Hydra configs live and how they are composed (compose, resolvers), and whether a config may
run, decided in one place (checks: the composed config before anything is built, with environment for this machine's
devices and directories); against_data checks the config against the tokenised data before the first batch."""
