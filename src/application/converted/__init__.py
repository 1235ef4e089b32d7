"""jaxport.application.converted."""
