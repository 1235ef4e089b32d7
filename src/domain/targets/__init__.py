"""jaxport.domain.targets."""
