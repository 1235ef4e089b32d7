"""jaxport.domain.converted."""
