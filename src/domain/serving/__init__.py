"""jaxport.domain.serving."""
