// reduce-tune: the kernels of the course material (the five documents data/README.md lists), by
// the names the documents give them, in each document's order, with the configuration key that
// reproduces each.
#include "tuner/material.h"

#include <array>

namespace reduce_tune {

namespace {

constexpr std::string_view kDoc0 = "000_87c89a01dbc85d13.txt";
constexpr std::string_view kDoc1 = "001_408b803bf385d235.txt";
constexpr std::string_view kDoc2 = "002_4b40e9ee6ccc9daf.txt";
constexpr std::string_view kDoc3 = "003_1d862ead78407f28.txt";
constexpr std::string_view kDoc4 = "004_012f064147cfd0ff.txt";

constexpr std::array kMaterial{
    // 000: lecture, #1..#8; int32, 2^24, block 512, partials summed on the host.
    MaterialKernel{kDoc0, "reduceNeighboredGmem_1", "neighbored_gmem.b512.host", 1, ""},
    MaterialKernel{kDoc0, "reduceNeighboredSmem_2", "neighbored.b512.host", 2, ""},
    MaterialKernel{kDoc0, "reduceNeighboredSmemNoDivergence_3", "neighbored_less.b512.host", 3, ""},
    MaterialKernel{kDoc0, "reduceInterleavedSmem_4", "interleaved.b512.host", 4, ""},
    MaterialKernel{kDoc0, "reduceUnrolling2_5", "unrolling.b512.u2.host", 5, ""},
    MaterialKernel{kDoc0, "reduceUnrollingWarp8_6", "unroll_warps.b512.u8.volatile.host", 6,
                   "builds on the document's unnamed, untimed 'Unrolling 8 Data Blocks' step "
                   "(that step alone is unrolling.b512.u8.host)"},
    MaterialKernel{kDoc0, "reduceCompleteUnrolling8_7", "complete_unroll.b512.u8.volatile.host", 7, ""},
    MaterialKernel{kDoc0, "reduceCompleteUnrolling8Template_8",
                   "complete_unroll_template.b512.u8.volatile.host", 8,
                   "the #8 slide also shows the declaration as reductionKernel<iBlockSize>"},

    // 001: Harris's 5-kernel table; int32, 2^22.
    MaterialKernel{kDoc1, "Kernel 1: interleaved addressing with divergent branching",
                   "neighbored.b128.host", 1,
                   "block 128 as in Harris's original slides (not stated in this document); Harris "
                   "reduces the block partials by launching the kernel again, host is the nearest finish"},
    MaterialKernel{kDoc1, "Kernel 2: interleaved addressing non-divergent branching",
                   "neighbored_less.b128.host", 2,
                   "block 128 as in Harris's original slides; partials reduced by a second launch there"},
    MaterialKernel{kDoc1, "Kernel 3: sequential addressing", "interleaved.b128.host", 3,
                   "block 128 as in Harris's original slides; partials reduced by a second launch there"},
    MaterialKernel{kDoc1, "Kernel 4: first step during global load", "unrolling.b128.u2.host", 4,
                   "Harris's 'first add during global load'; block 128 as in his slides; partials "
                   "reduced by a second launch there"},
    MaterialKernel{kDoc1, "Kernel 5: Unroll last warp", "unroll_warps.b128.u2.volatile.host", 5,
                   "block 128 as in Harris's original slides; partials reduced by a second launch there"},

    // 002: blog after Professional CUDA C Programming; int32, 2^24, block 512; Tesla K80, GT 740M.
    MaterialKernel{kDoc2, "reduceNeighbored", "neighbored_gmem.b512.host", 1,
                   "console label 'Neighbored'"},
    MaterialKernel{kDoc2, "reduceNeighboredLess", "neighbored_less.b512.host", 2,
                   "the document's kernel works in place in global memory, not shared memory; "
                   "console label 'Neighbored2'"},
    MaterialKernel{kDoc2, "reduceInterleaved", "interleaved.b512.host", 3,
                   "the document's kernel works in place in global memory, not shared memory"},
    MaterialKernel{kDoc2, "reduceUnrolling2", "unrolling.b512.u2.host", 4,
                   "the document's tree works in place in global memory, not shared memory"},
    MaterialKernel{kDoc2, "reduceUnrolling4", "unrolling.b512.u4.host", 5,
                   "code not shown; named and timed only; global-memory tree as reduceUnrolling2"},
    MaterialKernel{kDoc2, "reduceUnrolling8", "unrolling.b512.u8.host", 6,
                   "code not shown; named and timed only; global-memory tree as reduceUnrolling2"},
    MaterialKernel{kDoc2, "reduceUnrollWarps8", "unroll_warps.b512.u8.volatile.host", 7,
                   "the document's tree works in place in global memory; console label 'UnrollWarp8'"},
    MaterialKernel{kDoc2, "reduceCompleteUnrollWarps8", "complete_unroll.b512.u8.volatile.host", 8,
                   "the document's tree works in place in global memory; console label 'Cmptnroll8'"},
    MaterialKernel{kDoc2, "reduceCompleteUnroll", "complete_unroll_template.b512.u8.volatile.host", 9,
                   "template<unsigned int iBlockSize>; the document's tree works in place in global "
                   "memory; console label 'Cmptnroll'"},

    // 003: blog, same family; int32, 2^24, block 512; RTX 3080.
    MaterialKernel{kDoc3, "reduceNeighbored", "neighbored_gmem.b512.host", 1,
                   "code in the author's earlier post, not in this document"},
    MaterialKernel{kDoc3, "reduceNeightboredLess", "neighbored_less.b512.host", 2,
                   "the table's typo for reduceNeighboredLess (console label 'NeighboredLess'); code "
                   "in the author's earlier post; global-memory tree there"},
    MaterialKernel{kDoc3, "reduceInterleaved", "interleaved.b512.host", 3,
                   "code in the author's earlier post; global-memory tree there"},
    MaterialKernel{kDoc3, "reduceUnrolling2", "unrolling.b512.u2.host", 4,
                   "the document's tree works in place in global memory, not shared memory"},
    MaterialKernel{kDoc3, "reduceUnrolling4", "unrolling.b512.u4.host", 5,
                   "the document's tree works in place in global memory, not shared memory"},
    MaterialKernel{kDoc3, "reduceUnrolling8", "unrolling.b512.u8.host", 6,
                   "the document's tree works in place in global memory, not shared memory"},
    MaterialKernel{kDoc3, "reduceUnrollingWarps8", "unroll_warps.b512.u8.volatile.host", 7,
                   "the prose also spells it reduceUnrollWarps8; global-memory tree"},
    MaterialKernel{kDoc3, "reduceCompleteUnrollWarps8", "complete_unroll.b512.u8.volatile.host", 8,
                   "the document's tree works in place in global memory, not shared memory"},
    MaterialKernel{kDoc3, "reduceCompleteUnroll", "complete_unroll_template.b512.u8.volatile.host", 9,
                   "the table writes 'reduceCompleteUnroll (template)'; template<unsigned int "
                   "BlockSize>; global-memory tree"},

    // 004: slides; float32, 2^28, block 256, one atomicAdd per block; GTX 780 .. RTX 2080 Ti.
    MaterialKernel{kDoc4, "atomic global", "atomic_global.b256.atomic", 1,
                   "reduce_atomic_global (#1); block 256 taken from the series' launches"},
    MaterialKernel{kDoc4, "atomic shared", "atomic_shared.b256.atomic", 2,
                   "reduce_atomic_shared (#2); block 256 taken from the series' launches"},
    MaterialKernel{kDoc4, "reduction", "neighbored.b256.atomic", 3,
                   "reduce_shared (#3 'Shared'); block 256 taken from the series' launches"},
    MaterialKernel{kDoc4, "anti divergence", "neighbored_less.b256.atomic", 4,
                   "#4 'Shared Anti Divergence'; block 256 taken from the series' launches"},
    MaterialKernel{kDoc4, "anti conflicts", "interleaved.b256.atomic", 5,
                   "#5 'Shared Anti Conflicts', shared_anti_conflicts<<<1048576, 256>>>"},
    MaterialKernel{kDoc4, "dual load", "unrolling.b256.u2.atomic", 6,
                   "reduce_shared_dual_load (#6), shared_dual_load<<<524288, 256>>>"},
    MaterialKernel{kDoc4, "unrolled last", "unroll_warps.b256.u2.volatile.atomic", 7,
                   "#7, first shown with an extern __shared__ volatile array; the slides warn that "
                   "with independent thread scheduling (CC >= 7.0) each step needs __syncwarp() and "
                   "then show that version (register x, __syncwarp() around each store), which is "
                   "unroll_warps.b256.u2.syncwarp.atomic, the sm_70+ safe form; the table's GPU is a "
                   "Titan V (sm_70)"},
    MaterialKernel{kDoc4, "unrolled all", "complete_unroll_template.b256.u2.syncwarp.atomic", 8,
                   "reduce_shared_unrolled_all<BlockSize> (#8): dual load, template-unrolled tree "
                   "(BlockSize >= 512 .. >= 128), and the __syncwarp() warp tail the document shows"},
    MaterialKernel{kDoc4, "shuffle", "complete_unroll_template.b256.u2.shfl.atomic", 9,
                   "#9 'Shared Shuffle': unrolled all with the warp tail replaced by "
                   "x = data[t] + data[t + 32] then __shfl_sync with source lane threadIdx.x + 16 .. + 1 "
                   "and narrowing masks, equivalent to the __shfl_down_sync tail; "
                   "shared_shuffle<<<524288, 256>>> confirms 2 elements per thread"},
    MaterialKernel{kDoc4, "multi seq", "multi_seq.b256.g64.shfl.atomic", 10,
                   "#10 'Shared Multi Seq': shuffle with the dual load replaced by a grid-stride loop "
                   "(stride BlockSize * gridDim.x); launched as shared_multi_seq<<<37450, 256>>>, a "
                   "fixed grid of ceil(2^28 / (256 * 28)) blocks, about 28 elements per thread, "
                   "far more blocks than are resident; on the table's Titan V (80 SMs) that is 468 "
                   "blocks per SM, beyond the 64 a key allows, so g64, the largest, is the nearest; "
                   "the exact 37450 is not expressible as blocks per SM"},
};

} // namespace

std::span<const MaterialKernel> material_kernels() { return kMaterial; }

} // namespace reduce_tune
