// libFuzzer target: the store opening arbitrary bytes as a database file (db/store.cpp). The input
// is written to a temporary file and opened with db::Store; then the store is read and written
// the way the CLI and the tuner do. Every failure must be a StoreError: any other exception, a
// crash or undefined behaviour is a finding. And what the store promises about files it refuses
// is checked: a file that is not SQLite, a foreign database or a newer schema is left byte for
// byte as it was. Built and run by scripts/ci/fuzz.sh, linked with SQLite.
#include "db/store.h"

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <string_view>

using namespace reduce_tune;
using namespace reduce_tune::db;
namespace fs = std::filesystem;

namespace {

const std::string& db_path() {
  static const std::string path = [] {
    const fs::path dir = fs::exists("/dev/shm") ? fs::path("/dev/shm") : fs::temp_directory_path();
    return (dir / ("rt_fuzz_store_" + std::to_string(getpid()) + ".db")).string();
  }();
  return path;
}

void remove_files(const std::string& p) {
  std::error_code ec;
  for (const char* suffix : {"", "-wal", "-shm", "-journal"}) fs::remove(p + suffix, ec);
}

std::string read_all(const std::string& p) {
  std::ifstream f(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

[[noreturn]] void broken(const std::string& what) {
  std::fprintf(stderr, "fuzz_store: %s\n", what.c_str());
  std::abort();
}

Measurement measurement(std::uint64_t n, double us) {
  Measurement m;
  m.key = "unrolling.b256.u4.host";
  m.variant = "unrolling";
  m.block = 256, m.unroll = 4;
  m.tail = "none", m.finish = "host", m.dtype = DType::f32, m.op = Op::sum;
  m.n = n, m.median_us = m.min_us = m.max_us = us, m.reps = 3, m.valid = true;
  return m;
}

/// What the CLI and the tuner do with an open store: read everything, then write a run.
void exercise(Store& s) {
  (void)s.user_version();
  for (const DeviceRecord& d : s.devices()) {
    (void)s.device(d.uuid);
    (void)s.bests(d.uuid);
    (void)s.measurements(d.uuid);
    (void)s.nearest(d.uuid, DType::f32, Op::sum, Problem::array, Shape{1, 1000});
    (void)s.nearest_same_arch(d.cc_major, d.cc_minor, DType::f32, Op::sum, Problem::array, Shape{1, 1u << 20});
    (void)s.measured_keys(d.uuid, DType::f32, Op::sum, Problem::array, Shape{1, 1024});
  }
  (void)s.runs();
  DeviceRecord d;
  d.uuid = "GPU-fuzz";
  d.name = "fuzz";
  s.upsert_device(d);
  const std::int64_t run = s.begin_run({0, d.uuid, "0", "0", "", "", "", "", ""});
  s.add_measurements(run, {measurement(1024, 2.0), measurement(4096, 3.0)});
  s.end_run(run, "done");
  (void)s.nearest(d.uuid, DType::f32, Op::sum, Problem::array, Shape{1, 2000});
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string& path = db_path();
  remove_files(path);
  const std::string input(reinterpret_cast<const char*>(data), size);
  {
    std::ofstream f(path, std::ios::binary);
    f.write(input.data(), std::streamsize(input.size()));
  }
  try {
    Store s(path);
    try {
      exercise(s);
    } catch (const StoreError&) {
      // A damaged database may fail any statement: a StoreError is the expected answer.
    }
  } catch (const StoreError& e) {
    // Refused on open. Files refused for what they are must be left as they were.
    const std::string_view what = e.what();
    const bool refused = (e.code() & 0xff) == 26 /* SQLITE_NOTADB */ ||
                         what.find("foreign database") != std::string_view::npos ||
                         what.find("newer than this build") != std::string_view::npos;
    if (refused && read_all(path) != input) broken("a refused file was modified: " + std::string(what));
  }
  remove_files(path);
  return 0;
}
