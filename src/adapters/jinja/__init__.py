"""Jinja2: a chat template rendered in its sandboxed environment."""
