"""JAX's persistent compilation cache as the tests configure it."""

#: JAX's settings for a compilation cache that keeps every compilation (by
#: default JAX writes only compilations over a second and entries over a size).
KEEP_EVERY_COMPILATION = {"jax_persistent_cache_min_compile_time_secs": 0.0,
                          "jax_persistent_cache_min_entry_size_bytes": -1}
