"""jaxport.adapters.onnx."""
