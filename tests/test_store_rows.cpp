// Tests of a store's rows held in memory for repeated lookups (runtime/store_rows.h): the same
// rows as the store's queries, and the same choice from lookup() over them, on the shipped tuning.
#include <catch2/catch.hpp>

#include "runtime/lookup.h"
#include "runtime/store_rows.h"

#include <string>
#include <vector>

using namespace reduce_tune;

namespace {

// What identifies a row and its order.
std::vector<std::string> keys(const std::vector<db::Measurement>& ms) {
  std::vector<std::string> out;
  for (const db::Measurement& m : ms)
    out.push_back(m.key + " " + std::string(name(m.dtype)) + " " + std::string(name(m.op)) + " " +
                  std::to_string(m.count) + "x" + std::to_string(m.n) + " " + std::to_string(m.median_us));
  return out;
}

DeviceKey gpu(const std::string& uuid, const std::string& model, int major, int minor, int sms) {
  DeviceKey k;
  k.uuid = uuid, k.name = model, k.cc_major = major, k.cc_minor = minor, k.sm_count = sms;
  k.l2_bytes = 50 << 20, k.peak_gbps = 3352;
  return k;
}

} // namespace

TEST_CASE("store rows: the same rows as the store's queries, in its order", "[lookup][store_rows]") {
  const db::Store store(RT_TEST_SHIPPED_FILE, db::Store::Mode::read_only);
  const StoreRows store_rows(store);
  // The rows each() passes, copied, as the store's query returns them.
  struct Copies {
    const StoreRows& held;
    std::vector<db::Measurement> measurements(const std::string& uuid, const db::MeasurementFilter& f) const {
      std::vector<db::Measurement> out;
      held.each(uuid, f, [&](const db::Measurement& m) { out.push_back(m); });
      return out;
    }
    const std::vector<db::DeviceRecord>& devices() const { return held.devices(); }
  } rows{store_rows};
  REQUIRE(rows.devices().size() == store.devices().size());
  std::size_t seen = 0;
  for (const db::DeviceRecord& d : store.devices()) {
    const std::vector<db::MeasurementFilter> filters = {
        {}, {DType::f32, Op::sum, Problem::rows, {}}, {{}, {}, Problem::columns, {}},
        {DType::i32, {}, {}, {}}, {DType::f32, Op::sum, Problem::rows, Shape{1024, 1024}},
        {DType::f32, Op::max, Problem::segments, {}}};
    for (const db::MeasurementFilter& f : filters) {
      const std::vector<db::Measurement> want = store.measurements(d.uuid, f);
      CHECK(keys(rows.measurements(d.uuid, f)) == keys(want));
      seen += want.size();
    }
  }
  CHECK(seen > 1000); // the shipped tuning holds rows of each filter
  CHECK(rows.measurements("no such device", {}).empty());
  CHECK_THROWS_AS(rows.measurements(store.devices().front().uuid, {{}, db::OpKey::user(7), {}, {}}),
                  std::invalid_argument);
}

TEST_CASE("store rows: lookup over them chooses as over the stores", "[lookup][store_rows]") {
  const db::Store shipped(RT_TEST_SHIPPED_FILE, db::Store::Mode::read_only);
  const StoreRows shipped_rows(shipped);
  // The user's store: the shipped one again, so that one device's rows are a GPU's own.
  const std::string own = shipped.devices().front().uuid;
  const std::vector<DeviceKey> gpus = {
      gpu("GPU-a", "NVIDIA H100 80GB HBM3", 9, 0, 132), // shipped
      gpu("GPU-b", "NVIDIA H200", 9, 0, 132),           // shipped
      gpu("GPU-c", "NVIDIA H100 80GB HBM3", 9, 0, 66),  // another SM count: same_arch
      gpu("GPU-d", "NVIDIA A100-SXM4-40GB", 8, 0, 108), // carried
      gpu(own, shipped.devices().front().name, 9, 0, 132)}; // its own rows
  const std::vector<Shape> shapes = {{1, 3}, {4096, 4096}, {3, 1 << 22}, {1 << 14, 0}};
  std::size_t compared = 0, tuned = 0;
  for (const DeviceKey& g : gpus)
    for (Problem p : {Problem::rows, Problem::columns, Problem::segments})
      for (DType d : {DType::f32, DType::f64, DType::bf16})
        for (Op op : {Op::sum, Op::argmax})
          for (Shape sh : shapes) {
            if (sh.length == 0 && p != Problem::segments) continue;
            const Choice a = lookup(&shipped, &shipped, g, d, op, p, sh, {});
            const Choice b = lookup_rows(&shipped_rows, &shipped_rows, g, d, op, p, sh, {});
            INFO(g.name << " " << name(p) << " " << name(d) << " " << name(op) << " " << sh.count << "x" << sh.length);
            CHECK(key(b.config) == key(a.config));
            CHECK(b.match == a.match);
            CHECK(b.tuned_shape == a.tuned_shape);
            CHECK(b.median_us == a.median_us);
            CHECK(b.device_name == a.device_name);
            CHECK(b.note == a.note);
            ++compared, tuned += a.match != Match::builtin;
          }
  CHECK(tuned > compared / 2);
  // Without a user's store, and without either.
  const DeviceKey h100 = gpus.front();
  const Choice a = lookup(nullptr, &shipped, h100, DType::f32, Op::sum, Problem::rows, {4096, 4096}, {});
  const Choice b = lookup_rows(nullptr, &shipped_rows, h100, DType::f32, Op::sum, Problem::rows, {4096, 4096}, {});
  CHECK(a.match == Match::shipped);
  CHECK(key(b.config) == key(a.config));
  CHECK(b.match == a.match);
  const Choice none = lookup_rows(nullptr, nullptr, h100, DType::f32, Op::sum, Problem::rows, {4096, 4096}, {});
  CHECK(none.match == Match::builtin);
}
