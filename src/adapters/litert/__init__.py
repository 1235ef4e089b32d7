"""jaxport.adapters.litert."""
