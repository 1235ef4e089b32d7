"""jaxport.adapters.savedmodel."""
