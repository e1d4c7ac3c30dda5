// reduce-tune: the kernels of the course material, by the names the documents give them,
// with the configuration key that reproduces each.
#pragma once

#include <span>
#include <string_view>

namespace reduce_tune {

/// One kernel as a document of the course material names it.
struct MaterialKernel {
  std::string_view doc;    ///< seed file, e.g. "000_87c89a01dbc85d13.txt"
  std::string_view name;   ///< as the document writes it, e.g. "reduceUnrolling8"
  std::string_view key;    ///< configuration key, e.g. "unrolling.b512.u8.host"
  int order;               ///< position in the document's own table / sequence (1-based)
  std::string_view note;   ///< what differs from the document, if anything
};

/// Every kernel of the five documents, in each document's order.
std::span<const MaterialKernel> material_kernels();

} // namespace reduce_tune
