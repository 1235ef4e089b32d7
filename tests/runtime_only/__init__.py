"""Tests run in the runtime-only virtual environment (no JAX): see conftest.py."""
