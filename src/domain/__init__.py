"""The pure domain of jaxport: what an export *is*.

Nothing here imports jax, jaxlib, numpy, MLIR or flatbuffers; the adapters
translate between those technologies and the types defined here.
"""
