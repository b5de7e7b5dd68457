"""Metrics and evaluators: AS2 ranking metrics, SentEval-style probes, STS."""
