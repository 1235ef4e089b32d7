"""jaxport.domain.bundle."""
