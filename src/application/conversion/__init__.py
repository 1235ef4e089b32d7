"""jaxport.application.conversion."""
