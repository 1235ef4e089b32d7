"""jaxport.application.export."""
