"""jaxport.adapters.iree."""
