"""Adapters: everything that touches JAX, jaxlib's MLIR, NumPy or flatbuffers."""
