"""Helpers shared by test modules (no tests here): test modules import from this package, never from each other."""
