"""jaxport.adapters.web."""
