// reduce-tune: the sum references of rows, columns and offsets shapes without the general
// reference's per-result accumulator (every op's state, some 160 bytes a result: 2.5 GiB for the
// columns of a 2^24 x 1 shape), in the same order of additions, so bit for bit the same.
#pragma once

#include "tuner/reference.h"

#include <vector>

namespace reduce_tune {

/// One Reference per result of `s` over `a` for Op::sum, bit for bit as segmented_reference(a, s,
/// Op::sum, out) gives them: each result's elements added in the order that reference adds them
/// (columns: row by row, or by ranges of rows merged in order where columns are fewer than cores;
/// rows and offsets: element by element). Returns false, leaving `out` alone, for another op, or
/// for a rows or offsets shape of fewer results than cores over 2^20 elements or more (that
/// reference splits each result there), or for Problem::array.
bool sum_reference(const HostArray& a, const Segmentation& s, Op op, std::vector<Reference>& out);

} // namespace reduce_tune
