// Shared files are trusted files: the compile cache and the stores refuse a directory other users
// may write (kernels/trust.h), the library's own directories are made without write access for
// others, and the lookup goes on without a store it refuses.
#include <catch2/catch.hpp>

#include "db/store.h"
#include "kernels/nvrtc.h"
#include "kernels/trust.h"
#include "runtime/shipped.h"
#include "tests/fixtures.h"

#include <sys/stat.h>
#include <unistd.h>

using namespace reduce_tune;
using testing::TempDir;
namespace fs = std::filesystem;

namespace {

void set_mode(const fs::path& p, unsigned mode) { REQUIRE(chmod(p.c_str(), mode) == 0); }

std::string why_cache(const fs::path& p) { return untrusted_cache_dir(p).value_or(""); }
std::string why_store(const fs::path& p) { return untrusted_store(p).value_or(""); }

} // namespace

TEST_CASE("trust: a compile cache others may write is refused, sticky or not; group write is allowed",
          "[trust]") {
  TempDir t;
  const fs::path d = t.path / "cache";
  fs::create_directories(d);
  set_mode(d, 0755);
  CHECK(why_cache(d).empty());
  set_mode(d, 0775);
  CHECK(why_cache(d).empty());
  set_mode(d, 0777);
  CHECK_THAT(why_cache(d), Catch::Contains(d.string()) && Catch::Contains("writable by other users") &&
                               Catch::Contains("0777"));
  set_mode(d, 01777); // entries are found by name: others could plant one before it is written
  CHECK_THAT(why_cache(d), Catch::Contains("writable by other users"));
  try {
    CompileCache c(d);
    FAIL("a cache others may write was opened");
  } catch (const UntrustedDirectory& e) {
    CHECK_THAT(e.what(), Catch::Contains(d.string()) && Catch::Contains("writable by other users"));
  }
  // Callers that fall back to no cache on a cache they cannot use catch filesystem_error.
  CHECK_THROWS_AS(CompileCache(d), fs::filesystem_error);
  set_mode(d, 0755);
  CHECK_NOTHROW(CompileCache(d));
}

TEST_CASE("trust: an ancestor others may write is refused unless it is sticky", "[trust]") {
  TempDir t;
  const fs::path parent = t.path / "shared", d = parent / "cache";
  fs::create_directories(d);
  set_mode(parent, 0777);
  CHECK_THAT(why_cache(d), Catch::Contains("parent directory " + parent.string()));
  CHECK_THAT(why_store(d / "s.db"), Catch::Contains("parent directory " + parent.string()));
  set_mode(parent, 01777); // /tmp-like: others cannot rename what is ours
  CHECK(why_cache(d).empty());
  CHECK(why_store(d / "s.db").empty());
}

TEST_CASE("trust: a store's directory others may write is refused unless sticky, where the files must "
          "be ours", "[trust]") {
  TempDir t;
  const fs::path d = t.path / "stores", f = d / "tuning.db";
  fs::create_directories(d);
  set_mode(d, 0777);
  CHECK_THAT(why_store(f), Catch::Contains(f.string()) && Catch::Contains("writable by other users"));
  CHECK_THROWS_WITH(db::Store(f.string()), Catch::Contains("writable by other users"));
  CHECK_FALSE(fs::exists(f)); // refused before anything is created

  set_mode(d, 01777);
  CHECK(why_store(f).empty());
  { db::Store s(f.string()); }
  CHECK(why_store(f).empty());
  set_mode(f, 0666);
  CHECK_THAT(why_store(f), Catch::Contains(f.string() + " is writable by other users"));
  CHECK_THROWS_WITH(db::Store(f.string(), db::Store::Mode::read_only), Catch::Contains("writable by other users"));
  set_mode(f, 0644);
  if (geteuid() == 0) { // another user's file, put there first
    const fs::path planted = d / "planted.db";
    { db::Store s(planted.string()); }
    REQUIRE(chown(planted.c_str(), 65534, 65534) == 0);
    CHECK_THAT(why_store(planted), Catch::Contains("belongs to another user"));
    set_mode(d, 0755); // outside a shared directory the owner is not checked: a site's tuning
    CHECK(why_store(planted).empty());
  }
}

TEST_CASE("trust: the merge refuses a store others may replace; the lookup goes on without it", "[trust]") {
  TempDir t;
  const fs::path open = t.path / "open";
  fs::create_directories(open);
  const std::string other = (open / "other.db").string();
  { db::Store s(other); }
  set_mode(open, 0777);
  db::Store mine(t.file("mine.db"));
  CHECK_THROWS_WITH(mine.merge_from(other), Catch::Contains(other) && Catch::Contains("writable by other users"));
  std::string why;
  CHECK_FALSE(open_existing_store(other, &why));
  CHECK_THAT(why, Catch::Contains("cannot be used") && Catch::Contains("writable by other users"));
}

TEST_CASE("trust: the directories the library creates are not writable by others, whatever the umask",
          "[trust]") {
  TempDir t;
  const mode_t old = umask(0);
  const fs::path cache = t.path / "a" / "b" / "kernels", store = t.path / "c" / "d" / "tuning.db";
  try {
    CompileCache c(cache);
    db::Store s(store.string());
  } catch (...) {
    umask(old);
    throw;
  }
  umask(old);
  for (const fs::path& p : {t.path / "a", t.path / "a" / "b", cache, t.path / "c", store.parent_path()}) {
    INFO(p.string());
    CHECK((fs::status(p).permissions() & fs::perms::others_write) == fs::perms::none);
    CHECK((fs::status(p).permissions() & fs::perms::owner_write) != fs::perms::none);
  }
}
