"""mhagen for Python: generate a multi-head attention kernel for a spec with
the mhagen program, compile it with the system C compiler into a cached
shared object, and call it on NumPy arrays.

    import numpy as np, mhagen
    attn = mhagen.kernel(h=8, dk=64, mask="causal")
    out = attn(q, k, v)        # float32, C-contiguous, layout bshd

See "Python" in the repository's README.md.
"""

from ._kernel import (Kernel, MhagenError, Q8_0, cache_dir, dequantize_q8_0,
                      kernel, quantize_q8_0)

__all__ = ["Kernel", "MhagenError", "Q8_0", "cache_dir", "dequantize_q8_0",
           "kernel", "quantize_q8_0"]
__version__ = "0.1.0"
