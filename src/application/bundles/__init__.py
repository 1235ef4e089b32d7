"""jaxport.application.bundles."""
