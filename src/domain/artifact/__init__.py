"""jaxport.domain.artifact."""
