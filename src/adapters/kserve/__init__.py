"""jaxport.adapters.kserve."""
