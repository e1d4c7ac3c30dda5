// Tests of the stores the lookup reads (runtime/lookup.cpp, runtime/shipped.cpp): a user's store
// that may not exist, the shipped tuning beside it, and the shipped image compiled into the library.
#include <catch2/catch.hpp>

#include "runtime/defaults.h"
#include "runtime/shipped.h"
#include "tests/fixtures.h"
#include "tests/lookup_fixture.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>

using namespace reduce_tune;
using namespace reduce_tune::testing::lookup_fixture;
namespace fs = std::filesystem;
using reduce_tune::testing::TempDir;

TEST_CASE("lookup: a store that does not exist is not created", "[lookup]") {
  const TempDir dir;
  const fs::path missing = dir.path / "sub" / "tuning.db";
  std::string why;
  CHECK_FALSE(open_existing_store(missing.string(), &why));
  CHECK(why == "no tuning store at " + missing.string());
  CHECK_FALSE(fs::exists(missing));
  CHECK_FALSE(fs::exists(missing.parent_path()));
  CHECK_FALSE(open_existing_store(dir.path.string(), nullptr)); // a directory is not a store
}

TEST_CASE("lookup: an existing store opens, an unusable file gives the reason", "[lookup]") {
  const TempDir dir;
  const fs::path file = dir.path / "tuning.db";
  {
    db::Store s(file.string());
    s.upsert_device(device(A.uuid, "H100 A", 9, 0));
    add(s, A.uuid, {row(kHost, k20, 4.0)});
  }
  std::string why;
  const auto s = open_existing_store(file.string(), &why);
  REQUIRE(s);
  CHECK(key_of(lookup(*s, A, DType::f32, Op::sum, k20, {})) == kHost);

  const fs::path junk = dir.path / "junk.db";
  std::ofstream(junk) << "not a database, but long enough to be read as one's header by SQLite "
                         "which wants at least a hundred bytes before it judges the file format";
  CHECK_FALSE(open_existing_store(junk.string(), &why));
  CHECK_THAT(why, Catch::StartsWith("the tuning store " + junk.string() + " cannot be used: "));
}

TEST_CASE("lookup: the shipped tuning after the user's own, before other GPUs", "[lookup][shipped]") {
  db::Store user(":memory:"), shipped(":memory:");
  DeviceKey me = A;
  me.name = "NVIDIA H100 80GB HBM3";
  db::DeviceRecord model = device("model:NVIDIA H100 80GB HBM3", "NVIDIA H100 80GB HBM3", 9, 0);
  db::DeviceRecord other = device("model:NVIDIA H200", "NVIDIA H200", 9, 0);
  shipped.upsert_device(model);
  shipped.upsert_device(other);
  add(shipped, model.uuid, {row(kHost, k20, 4.0)});
  add(shipped, other.uuid, {row(kVector, k20, 1.0)});
  Requirements req;
  // No store of the user's: the shipped rows of this model, though the other model's are faster.
  Choice c = lookup(nullptr, &shipped, me, DType::f32, Op::sum, Problem::array, {1, k20}, req);
  CHECK(c.match == Match::shipped);
  CHECK(key(c.config) == kHost);
  CHECK(c.device_name == "NVIDIA H100 80GB HBM3 (shipped)");
  // A GPU model the library ships nothing for: the same architecture's.
  DeviceKey gh = me;
  gh.name = "NVIDIA GH200";
  c = lookup(nullptr, &shipped, gh, DType::f32, Op::sum, Problem::array, {1, k20}, req);
  CHECK(c.match == Match::same_arch);
  // The user's own measurement wins, at a nearest size too.
  user.upsert_device(device(A.uuid, "NVIDIA H100 80GB HBM3", 9, 0));
  add(user, A.uuid, {row(kVector, k24, 9.0)});
  c = lookup(&user, &shipped, me, DType::f32, Op::sum, Problem::array, {1, k20}, req);
  CHECK(c.match == Match::nearest_size);
  CHECK(key(c.config) == kVector);
  // Neither store: the built-in default, saying why.
  c = lookup(nullptr, nullptr, me, DType::f32, Op::sum, Problem::array, {1, k20}, req, "no store here");
  CHECK(c.match == Match::builtin);
  CHECK(c.note == "no store here");
  CHECK(name(Match::shipped) == "shipped");
  CHECK(name(Match::carried) == "carried");
}

TEST_CASE("lookup: the shipped rows of the model are this GPU's only at their SM count", "[lookup][shipped]") {
  db::Store shipped(":memory:");
  db::DeviceRecord model = device("model:NVIDIA H100 80GB HBM3", "NVIDIA H100 80GB HBM3", 9, 0);
  db::DeviceRecord other = device("model:NVIDIA H200", "NVIDIA H200", 9, 0);
  shipped.upsert_device(model); // 132 SMs
  shipped.upsert_device(other);
  add(shipped, model.uuid, {row(kHost, k20, 4.0)});
  add(shipped, other.uuid, {row(kVector, k20, 1.0)});
  const Requirements req;
  DeviceKey me = A;
  me.name = model.name;
  for (const int sms : {132, 0}) { // the same count, or one not known: the model's own rows
    me.sm_count = sms;
    const Choice c = lookup(nullptr, &shipped, me, DType::f32, Op::sum, Problem::array, {1, k20}, req);
    CHECK(c.match == Match::shipped);
    CHECK(key(c.config) == kHost);
    CHECK(c.device_name == "NVIDIA H100 80GB HBM3 (shipped)");
  }
  // The model limited to 32 or 66 SMs: neither the model's 132-SM rows nor the architecture's
  // shipped rows serve it; the built-in defaults (per SM) do, saying why.
  for (const int sms : {32, 66}) {
    me.sm_count = sms;
    const Choice c = lookup(nullptr, &shipped, me, DType::f32, Op::sum, Problem::array, {1, k20}, req);
    CHECK(c.match == Match::builtin);
    CHECK_THAT(c.note, Catch::Contains("the shipped tuning of NVIDIA H100 80GB HBM3 is for 132 SMs, "
                                       "this GPU has " + std::to_string(sms)));
    CHECK(key(c.config) == key(builtin_config(Problem::array, DType::f32, Op::sum, {1, k20}, req, me)));
  }
  // Its own rows in the user's store still come first; another GPU's there (same_arch) before the
  // defaults, the shipped rows never.
  db::Store user(":memory:");
  user.upsert_device(device(A.uuid, me.name, 9, 0));
  user.upsert_device(device(B.uuid, "NVIDIA H100 PCIe", 9, 0));
  add(user, B.uuid, {row(kAtomic, k24, 50.0)});
  me.sm_count = 32;
  Choice c = lookup(&user, &shipped, me, DType::f32, Op::sum, Problem::array, {1, k20}, req);
  CHECK(c.match == Match::same_arch);
  CHECK(key(c.config) == kAtomic);
  add(user, A.uuid, {row(kHost, k24, 40.0)});
  c = lookup(&user, &shipped, me, DType::f32, Op::sum, Problem::array, {1, k20}, req);
  CHECK(c.match == Match::nearest_size);
  CHECK(key(c.config) == kHost);
  // A model the shipped tuning holds at this SM count among others: its own rows, shipped.
  db::DeviceRecord small = model;
  small.uuid = "model:NVIDIA H100 80GB HBM3 (32 SMs)";
  small.sm_count = 32;
  shipped.upsert_device(small);
  add(shipped, small.uuid, {row(kVector, k24, 30.0)});
  c = lookup(nullptr, &shipped, me, DType::f32, Op::sum, Problem::array, {1, k20}, req);
  CHECK(c.match == Match::shipped);
  CHECK(key(c.config) == kVector);
}

TEST_CASE("lookup: the shipped store opens read-only, from the environment, the caller or the library", "[lookup][shipped]") {
  const TempDir dir;
  const std::string path = (dir.path / "shipped.db").string();
  { db::Store s(path); s.upsert_device(device("model:X", "X", 9, 0)); }
  const auto before = fs::last_write_time(path);
  setenv("REDUCE_TUNE_SHIPPED_DB", path.c_str(), 1);
  CHECK(shipped_source().kind == ShippedSource::Kind::file);
  CHECK(shipped_source().path == path);
  std::string why;
  auto s = open_shipped_store(&why);
  REQUIRE(s);
  CHECK(s->devices().size() == 1);
  CHECK_THROWS_AS(s->upsert_device(device("model:Y", "Y", 9, 0)), db::StoreError); // read-only
  s.reset();
  CHECK(fs::last_write_time(path) == before);
  setenv("REDUCE_TUNE_SHIPPED_DB", (dir.path / "absent.db").string().c_str(), 1);
  CHECK_FALSE(open_shipped_store(&why));
  CHECK_THAT(why, Catch::Contains("cannot be used") && Catch::Contains("no such file"));
  CHECK_FALSE(fs::exists(dir.path / "absent.db"));
  { std::ofstream junk(dir.path / "junk.db"); junk << "not a database, not at all"; }
  setenv("REDUCE_TUNE_SHIPPED_DB", (dir.path / "junk.db").string().c_str(), 1);
  CHECK_FALSE(open_shipped_store(&why));
  CHECK_THAT(why, Catch::Contains("not a SQLite database"));
  setenv("REDUCE_TUNE_SHIPPED_DB", "", 1);
  CHECK(shipped_source().kind == ShippedSource::Kind::none);
  CHECK_FALSE(open_shipped_store(&why));
  CHECK(why == "no shipped tuning");
  CHECK_FALSE(open_shipped_store(&why, path)); // the environment wins over Options::shipped_path
  unsetenv("REDUCE_TUNE_SHIPPED_DB");
  CHECK(shipped_source(path).path == path);    // unset: the caller's path
  REQUIRE(open_shipped_store(&why, path));
  // Neither: the image compiled into the library.
  CHECK(shipped_source().kind == ShippedSource::Kind::embedded);
  CHECK(shipped_source().describe() == "built into the library");
  auto embedded = open_shipped_store(&why);
  REQUIRE(embedded);
  CHECK_THROWS_AS(embedded->upsert_device(device("model:Y", "Y", 9, 0)), db::StoreError);
}

TEST_CASE("lookup: the embedded shipped tuning is the repository's file, current and anonymous", "[lookup][shipped]") {
  // Byte for byte the file the build embedded, in rollback-journal mode (header bytes 18-19: 1, not
  // WAL's 2): a WAL image cannot be read in place, nor a WAL file read-only where the reader cannot
  // create its -shm beside it (an install another user owns).
  const auto image = embedded_tuning();
  REQUIRE(image.size() > 100);
  CHECK(int(image[18]) == 1);
  CHECK(int(image[19]) == 1);
  std::ifstream file(RT_TEST_SHIPPED_FILE, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  CHECK(bytes.size() == image.size());
  CHECK(std::equal(image.begin(), image.end(), reinterpret_cast<const unsigned char*>(bytes.data())));
  db::Store r(image, "the embedded tuning");
  CHECK(r.user_version() >= db::Store::kOldestReadable); // read-only: any version its reads need
  CHECK(r.user_version() <= db::Store::schema_version());
  CHECK(r.devices().size() >= 2);
  for (const auto& d : r.devices()) {
    CHECK(d.uuid.rfind("model:", 0) == 0); // no GPU UUIDs
    CHECK(d.host.empty());                  // no host names
    CHECK_FALSE(r.bests(d.uuid).empty());
  }
}
