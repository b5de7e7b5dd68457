"""serving stage of ctxsent."""
