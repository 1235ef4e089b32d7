"""jaxport.adapters.jax."""
