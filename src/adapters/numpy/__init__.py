"""NumPy on the host: what generation computes outside any runtime (sampling)."""
