"""Self-supervised objectives: example builders, collators and losses."""
