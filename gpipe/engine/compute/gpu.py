"""GPU traversal kernels: the CUDA C++ in ``kernels/*.cu``, compiled by CuPy and launched here.

Same names, signatures and semantics as :mod:`gpipe.engine.compute.cpu` (see "Kernel contract" in
ARCHITECTURE.md), on CuPy arrays of the current device. Each kernel family has its own
module; :mod:`gpipe.engine.compute.cuda` finds, compiles and caches the sources.

- :func:`bfs_expand` -- one level of top-down BFS (``kernels/bfs.cu``);
- :func:`bfs` -- a whole direction-optimizing BFS of a one-owner graph in one cooperative
  kernel (``kernels/bfs_persistent.cu``);
- :func:`sssp_relax` -- one round of Bellman-Ford relaxation (``kernels/sssp.cu``);
- :func:`sssp` -- a whole one-owner SSSP, non-negative weights: near-far in one cooperative
  kernel (``kernels/sssp_nearfar.cu``);
- :func:`build_csr` -- an owner's CSR from an edge list on the device, by atomic scatter
  (``kernels/csr.cu``);
- :func:`bfs_owner_top_down`, :func:`bfs_owner_claim`, :func:`bfs_owner_bottom_up` and the
  frontier/bitmap conversions -- the level steps of a BFS over several owners
  (``kernels/bfs_owners.cu``).
- ``sssp_owner_*`` -- one owner's share of an SSSP over several owners: relaxation rounds
  with fused pruning of remote candidates, merge, pile splits, outbox
  (``kernels/sssp_owners.cu``, :mod:`gpipe.engine.compute.gpu_sssp_owners`).
- :func:`bfs_batch`, :func:`bfs_batch_parents`, :func:`sssp_batch` -- one traversal per source
  for a batch of sources (issue 16): bit-parallel multi-source BFS, 64 sources a word
  (``kernels/bfs_batch.cu``), and near-far over (source, vertex) pairs
  (``kernels/sssp_batch.cu``); :data:`BFS_BATCH_WIDTH`, :data:`SSSP_BATCH_WIDTH`
  (:mod:`gpipe.engine.compute.gpu_batch`).
- :func:`full`, :func:`take`, :func:`scatter`, :func:`astype`, :func:`flatnonzero`,
  :func:`packbits_little` and the other array operations of the build and query path, which
  CuPy would compile at their first use (``kernels/util.cu``, :mod:`gpipe.engine.compute.gpu_arrays`).
"""

from gpipe.engine.compute.cuda import source_dir, warmup
from gpipe.engine.compute.gpu_arrays import (arange, astype, copy, count_nonzero, cumsum_in_place,
                                             flatnonzero, full, isfinite, logical_not, negative,
                                             non_negative, packbits_little, scatter, take, unique)
from gpipe.engine.compute.gpu_batch import (BFS_BATCH_WIDTH, SSSP_BATCH_WIDTH, bfs_batch, bfs_batch_parents,
                                            sssp_batch)
from gpipe.engine.compute.gpu_bfs import bfs, bfs_expand
from gpipe.engine.compute.gpu_bfs_owners import (BITMAP_BITS, BITMAP_DTYPE, FRONTIER, FRONTIER_EDGES, NEXT,
                                                 NEXT_EDGES, PAIRS_MAX_FRONTIER, QUEUES, bfs_owner_bottom_up,
                                                 bfs_owner_claim,
                                                 bfs_owner_claim_pairs, bfs_owner_level_begin, bfs_owner_mark,
                                                 bfs_owner_pairs, bfs_owner_resolve,
                                                 bfs_owner_top_down,
                                                 bitmap_to_frontier, frontier_to_bitmap)
from gpipe.engine.compute.gpu_csr import build_csr, build_csr_pieces
from gpipe.engine.compute.gpu_sssp import sssp, sssp_relax
from gpipe.engine.compute.gpu_sssp_owners import (sssp_owner_advance, sssp_owner_counts, sssp_owner_merge,
                                                  sssp_owner_pack, sssp_owner_relax, sssp_owners_delta)

__all__ = ["arange", "astype", "count_nonzero", "flatnonzero", "full", "isfinite", "logical_not",
           "negative", "non_negative", "packbits_little", "scatter", "take", "unique",
           "BITMAP_BITS", "BITMAP_DTYPE", "FRONTIER", "FRONTIER_EDGES", "NEXT", "NEXT_EDGES", "QUEUES",
           "BFS_BATCH_WIDTH", "SSSP_BATCH_WIDTH", "bfs_batch", "bfs_batch_parents", "sssp_batch",
           "bfs", "bfs_expand",
           "bfs_owner_bottom_up", "bfs_owner_claim", "bfs_owner_top_down", "bitmap_to_frontier",
           "build_csr", "build_csr_pieces", "frontier_to_bitmap", "source_dir", "sssp", "sssp_owner_advance",
           "sssp_owner_counts", "sssp_owner_merge", "sssp_owner_pack", "sssp_owner_relax",
           "sssp_owners_delta", "sssp_relax", "warmup"]
