"""Encoders, decoders and rankers."""
