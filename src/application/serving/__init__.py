"""jaxport.application.serving."""
