"""Summaries of finished runs, shared by the report, the notebook and the loggers: grouping runs into models and
seeds (runs), means, spreads and significance (summary), cost to a target quality (compute) and figures (plots)."""
