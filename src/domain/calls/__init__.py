"""jaxport.domain.calls."""
