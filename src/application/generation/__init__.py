"""Generating tokens with a model saved as a generative bundle, on any runtime."""
