// A segmented sweep stopped after K measurements and resumed measures what the uninterrupted sweep
// does, and a second resume measures nothing (a requeued tuning task repeats no work). Times vary
// from run to run, and with them which evict-first twins rank among the fastest: the count an
// uninterrupted sweep makes is computed from the resumed store's own times, beside a real
// uninterrupted run checked the same way.
#include <catch2/catch.hpp>

#include "db/store.h"
#include "kernels/catalogue.h"
#include "kernels/driver.h"
#include "kernels/segmented.h"
#include "tuner/segmented_sweep.h"
#include "tuner/sweep.h"

#include <unistd.h>

#include <filesystem>
#include <map>
#include <set>

using namespace reduce_tune;

namespace {

struct TempDir {
  std::filesystem::path path;
  TempDir() {
    std::string t = (std::filesystem::temp_directory_path() / "rt-resume-XXXXXX").string();
    REQUIRE(mkdtemp(t.data()));
    path = t;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
};

/// What an uninterrupted sweep measures at each shape, given the times `ms` holds for its plain
/// configurations: every valid plain configuration not pointless there, and the twins (not
/// pointless) of those among the TwinFilter::kKeep fastest or without a valid time.
std::size_t expected_count(const SweepOptions& o, const cuda::DeviceInfo& info,
                           const std::vector<db::Measurement>& ms, std::set<std::string>* plains_out) {
  const Target t{DType::f32, Op::sum, info.cc(), info.max_threads_per_block, info.sm_count, false, o.problem};
  std::vector<Config> configs;
  for (const Config& c : selected_configs(o))
    if (!invalid_reason(c, t)) configs.push_back(c);
  std::size_t count = 0;
  for (const Shape& shape : o.shapes) {
    std::map<std::string, double> plain_us;
    for (const auto& m : ms)
      if (m.shape() == shape && m.valid && !evict_first_twin_of(*parse_key(m.key))) plain_us[m.key] = m.median_us;
    for (const Config& c : configs) {
      if (pointless(c, shape)) continue;
      const std::optional<Config> plain = evict_first_twin_of(c);
      if (!plain) {
        ++count;
        if (plains_out) plains_out->insert(std::to_string(shape.count) + "x" + key(c));
        continue;
      }
      const auto it = plain_us.find(key(*plain));
      std::size_t faster = 0;
      if (it != plain_us.end())
        for (const auto& [k, us] : plain_us) faster += us < it->second;
      count += faster < TwinFilter::kKeep;
    }
  }
  return count;
}

std::vector<db::Measurement> stored(const std::string& db, const std::string& uuid) {
  return db::Store(db).measurements(uuid);
}

} // namespace

TEST_CASE("resume: a rows sweep stopped after K measurements and resumed measures what an uninterrupted "
          "one does; resumed again, nothing", "[gpu][resume]") {
  TempDir dir;
  cuda::Context ctx(0);
  const cuda::DeviceInfo info = cuda::device_info(0);
  SweepOptions o;
  o.problem = Problem::rows;
  o.dtypes = {DType::f32};
  o.ops = {Op::sum};
  o.shapes = {{1024, 1000}, {64, 1u << 14}};
  o.reps = 5;

  o.db_path = (dir.path / "whole.db").string();
  const SweepResult whole = sweep(o);
  REQUIRE_FALSE(whole.interrupted);
  const auto whole_ms = stored(o.db_path, whole.device.uuid);
  std::set<std::string> whole_plains;
  CHECK(whole_ms.size() == expected_count(o, info, whole_ms, &whole_plains));
  REQUIRE(whole_ms.size() > 2 * TwinFilter::kKeep);

  // Stopped through the stop callback after K stored measurements: inside the first shape's twins.
  o.db_path = (dir.path / "resumed.db").string();
  std::size_t first_shape = 0;
  for (const auto& m : whole_ms) first_shape += m.shape() == o.shapes[0];
  REQUIRE(first_shape > 2);
  const std::size_t k = first_shape - 2;
  std::size_t seen = 0;
  const SweepResult part = sweep(o, [&](const Progress& p) { seen += p.phase == "stored"; },
                                 [&] { return seen >= k; });
  CHECK(part.interrupted);
  CHECK(stored(o.db_path, part.device.uuid).size() == k);

  o.resume = true;
  const SweepResult rest = sweep(o);
  CHECK_FALSE(rest.interrupted);
  const auto resumed_ms = stored(o.db_path, part.device.uuid);
  std::set<std::string> resumed_plains;
  CHECK(resumed_ms.size() == expected_count(o, info, resumed_ms, &resumed_plains));
  CHECK(resumed_plains == whole_plains);
  std::set<std::pair<std::string, std::uint64_t>> distinct;
  for (const auto& m : resumed_ms) distinct.insert({m.key, m.count});
  CHECK(distinct.size() == resumed_ms.size());
  if (resumed_ms.size() != whole_ms.size())
    WARN("the uninterrupted run measured " << whole_ms.size() << ", the resumed one " << resumed_ms.size()
                                           << ": their times ranked different twins among the fastest");

  const SweepResult again = sweep(o);
  CHECK(again.measurements.empty());
  CHECK(stored(o.db_path, part.device.uuid).size() == resumed_ms.size());
}
