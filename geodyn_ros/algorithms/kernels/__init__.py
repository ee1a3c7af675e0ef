"""Private numba kernels, one module per recursion family (see :mod:`.common`)."""
