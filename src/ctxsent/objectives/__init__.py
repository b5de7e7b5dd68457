"""objectives stage of ctxsent."""
