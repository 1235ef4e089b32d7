"""Ray Serve and Ray Data: jaxport models on a Ray cluster (the `ray` extra)."""
