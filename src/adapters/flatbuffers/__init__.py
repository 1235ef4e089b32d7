"""jaxport.adapters.flatbuffers."""
