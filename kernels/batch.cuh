// The edge-to-slot search of the batch kernels (bfs_batch.cu, sssp_batch.cu), staged per block.
//
// An edge-parallel step gives each thread edges of a level or pass and must find, for edge e,
// its queue slot: the first t with edge_end[t] > e (edge_end the inclusive scan of the queued
// slots' degrees). A binary search in global memory costs log2(q) dependent loads per edge,
// most of them cache misses once the queue is millions of slots long (a batch's queues are k
// times a single source's). Here a block takes a chunk of consecutive edges [e0, e1), finds
// the chunk's first and last slots with two global searches, copies the edge_end values of
// the slots in between into shared memory (coalesced), and each thread then searches those
// (at most kStageSlots, log2 of that many shared loads). A chunk spanning more slots than
// that (runs of zero-degree slots) keeps the global search, bounded by its first and last
// slots. The same load balance as frontier.cuh's frontier_slot, after Merrill, Garland and
// Grimshaw ("Scalable GPU Graph Traversal", PPoPP 2012), with less memory traffic.
//
// Written for NVRTC (-std=c++17): no standard headers; everything lives in an anonymous
// namespace; frontier.cuh must come first (frontier_slot).
#pragma once

namespace {

constexpr int kStageSlots = 1024;  // edge_end values staged per chunk (8 KiB of shared memory)

struct StagedChunk {
    long long lo;    // first slot of the chunk
    long long span;  // slots from lo to the chunk's last slot, inclusive
};

// Stage the slots of edges [e0, e1) (e0 < e1 <= edge_end[count - 1]). Every thread of the
// block calls it together; s_end holds kStageSlots values, s_meta two. The caller must
// __syncthreads() before the next call (s_end and s_meta are rewritten).
__device__ __forceinline__ StagedChunk stage_chunk(const long long* __restrict__ edge_end,
                                                   long long count, long long e0, long long e1,
                                                   long long* s_end, long long* s_meta) {
    if (threadIdx.x == 0) s_meta[0] = frontier_slot(edge_end, count, e0);
    if (threadIdx.x == blockDim.x - 1) s_meta[1] = frontier_slot(edge_end, count, e1 - 1);
    __syncthreads();
    StagedChunk chunk{s_meta[0], s_meta[1] - s_meta[0] + 1};
    if (chunk.span <= kStageSlots) {
        for (long long t = threadIdx.x; t < chunk.span; t += blockDim.x) {
            s_end[t] = edge_end[chunk.lo + t];
        }
    }
    __syncthreads();
    return chunk;
}

// The slot of edge e of the staged chunk: the first t with edge_end[t] > e, by frontier_slot's
// search of the staged values (or of the chunk's slots in global memory when not staged).
__device__ __forceinline__ long long chunk_slot(const long long* __restrict__ edge_end,
                                                const StagedChunk& chunk, const long long* s_end,
                                                long long e) {
    if (chunk.span <= kStageSlots) {
        return chunk.lo + frontier_slot(s_end, chunk.span, e);
    }
    return chunk.lo + frontier_slot(edge_end + chunk.lo, chunk.span, e);
}

// Every edge of a step (edge_end[count - 1] of them) in block-uniform chunks [e0, e1) of
// kItems * blockDim consecutive edges, their slots staged (stage_chunk): each thread calls
// item(e, e1, staged) for its kItems edges e = e0 + i * blockDim + threadIdx.x of a chunk, the
// ones past e1 included (so that every lane runs every item, for warp-wide calls), and finds
// the slot of an edge e < e1 with chunk_slot(edge_end, staged, s_end, e). s_end and s_meta are
// stage_chunk's; every thread of the block calls this together.
template <int kItems, typename Item>
__device__ __forceinline__ void for_each_staged_edge(const long long* __restrict__ edge_end,
                                                     long long count, long long* s_end,
                                                     long long* s_meta, Item item) {
    const long long n_edges = edge_end[count - 1];
    const long long chunk = static_cast<long long>(blockDim.x) * kItems;
    for (long long e0 = static_cast<long long>(blockIdx.x) * chunk; e0 < n_edges;
         e0 += static_cast<long long>(gridDim.x) * chunk) {  // block-uniform
        const long long e1 = e0 + chunk < n_edges ? e0 + chunk : n_edges;
        const StagedChunk staged = stage_chunk(edge_end, count, e0, e1, s_end, s_meta);
        for (int i = 0; i < kItems; ++i) {
            item(e0 + static_cast<long long>(i) * blockDim.x + threadIdx.x, e1, staged);
        }
        __syncthreads();  // s_end and s_meta are restaged
    }
}

}  // namespace
