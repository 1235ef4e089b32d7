"""jaxport.adapters.onnx.ops."""
