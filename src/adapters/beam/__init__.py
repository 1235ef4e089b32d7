"""Apache Beam: jaxport models in RunInference (the `beam` extra)."""
