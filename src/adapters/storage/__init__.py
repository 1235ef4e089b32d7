"""jaxport.adapters.storage."""
