"""How jaxport writes StableHLO portable artifacts: the one flag every writer passes.

Its own module so that the rewrites (which the verifying process imports) and
the unfolding of newer operations (which :mod:`.specialize` imports) share it
without importing each other.
"""

from __future__ import annotations

#: Whether modules are written with Shardy's ops kept (``use_mixed_serialization``), as JAX's
#: CPU backend writes them; the verifying process does not start a backend to ask.
MIXED_SERIALIZATION = True
