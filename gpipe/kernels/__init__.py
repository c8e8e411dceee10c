"""Traversal kernels: `cpu` (Numba) and `gpu` (CUDA C++ in kernels/*.cu, loaded by CuPy)."""
