"""Labelled data: AS2 records and their readers, SentEval-style tasks."""
