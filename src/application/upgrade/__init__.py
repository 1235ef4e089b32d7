"""``jaxport upgrade``: artifacts renewed at the newest format version before JAX's window closes."""
