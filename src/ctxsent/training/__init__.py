"""training stage of ctxsent."""
