// reduce-tune store: the shipped-tuning form of a store (share/reduce-tune/tuning.db, a site's
// merged fleet tuning): what `reduce-tune ship` writes and scripts/ship-tuning.sh installs.
#pragma once

#include <cstddef>
#include <string>

namespace reduce_tune::db {

/// What write_shipped() kept.
struct ShipStats {
  std::size_t models = 0;       ///< GPU models (devices after the merge by model)
  std::size_t runs = 0;
  std::size_t measurements = 0;
  std::size_t best = 0;         ///< best rows
};

/// Writes `out_path`, the shipped form of the store `store_path` (migrated if older, else left as
/// it is): stripped of what identifies a machine (host names, GPU UUIDs: a device becomes
/// "model:<GPU name>", one description of each model kept), of failed checks and published rows,
/// and of all but the `keep` fastest configurations of each (GPU model, dtype, op, problem,
/// shape); rollback journal, vacuumed, so the library can embed or read it in place. Provenance
/// (models, drivers, tool and NVRTC versions, dates, commands) stays in the devices and runs
/// tables. Replaces `out_path` atomically. Throws StoreError.
///
/// A point's best row: its fastest measurement of any run (`supersede` < 0), or, with `supersede`
/// a fraction >= 0, the choice of its runs in the order they started: a later run's fastest
/// replaces the choice of the runs before it where that run measured the chosen configuration
/// more than `supersede` slower than its own fastest (where it has no time of the choice: where it
/// is faster than the choice's own time). So a later sweep (a newer catalogue, driver or host)
/// that measured a shipped choice beside its own best replaces it only where it found that choice
/// clearly slower, and its noise does not replace a choice it measured as fast. The chosen
/// measurement is kept beside the `keep` fastest, with each replacing run's measurement of what
/// it replaced; measurements faster than a point's choice (other runs', within the margin) are
/// not shipped, so the choice is the fastest of what is: a merge of the result, or shipping it
/// again without `supersede`, keeps every best row.
ShipStats write_shipped(const std::string& store_path, const std::string& out_path, int keep = 8,
                        double supersede = -1);

} // namespace reduce_tune::db
