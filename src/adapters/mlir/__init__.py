"""jaxport.adapters.mlir."""
