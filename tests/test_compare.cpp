// Tests of the comparison tables, the published figures and the plots (tuner/compare.cpp).
#include <catch2/catch.hpp>

#include "db/store.h"
#include "kernels/nvrtc.h"
#include "tuner/compare.h"
#include "tuner/material.h"

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <random>
#include <set>

using namespace reduce_tune;
namespace fs = std::filesystem;

namespace {

constexpr const char* kDoc4 = "004_012f064147cfd0ff.txt";
constexpr std::uint64_t kN = std::uint64_t(1) << 28;

db::DeviceRecord device(const std::string& uuid, const std::string& name, double peak) {
  db::DeviceRecord d;
  d.uuid = uuid;
  d.name = name;
  d.cc_major = 9;
  d.peak_gbps = peak;
  return d;
}

db::Measurement meas(const std::string& key, double us, std::uint64_t n = kN, bool valid = true,
                     DType dtype = DType::f32) {
  db::Measurement m;
  m.key = key;
  m.variant = key.substr(0, key.find('.'));
  m.dtype = dtype;
  m.op = Op::sum;
  m.n = n;
  m.median_us = us;
  m.gbps = double(n) * 4 / us / 1e3;
  m.pct_peak = m.gbps / 48.14;
  m.valid = valid;
  return m;
}

/// Two GPUs measured on document 004's kernels; the second is named like a GPU of the document.
std::vector<GpuData> fixture() {
  GpuData h200{device("GPU-h200", "NVIDIA H200", 4814), {}};
  h200.measurements = {meas("atomic_global.b256.atomic", 80000), meas("atomic_shared.b256.atomic", 4000),
                       meas("neighbored.b256.atomic", 800), meas("neighbored.b256.atomic", 700), // two runs: best
                       meas("neighbored_less.b256.atomic", 500),
                       meas("interleaved.b256.atomic", 100, kN, false),     // failed the check: never shown
                       meas("interleaved.b256.atomic", 400),
                       meas("interleaved.b512.atomic", 300),                // same variant, another configuration
                       meas("unrolling.b256.u2.atomic", 1, kN / 2),         // another size: not this table
                       meas("unrolling.b256.u2.atomic", 260, kN, true, DType::i32), // another dtype
                       meas("vectorized.b512.u4.v4.g0.shfl.atomic", 250)};
  GpuData titan{device("GPU-titan", "Titan V", 651), {}};
  titan.measurements = {meas("atomic_global.b256.atomic", 90000), meas("neighbored.b256.atomic", 3000)};
  GpuData idle{device("GPU-idle", "NVIDIA H100", 3352), {meas("neighbored.b256.atomic", 10, 1 << 20)}};
  return {h200, titan, idle};
}

std::vector<db::PublishedRecord> published() { return parse_published_csv(embedded_published_csv()); }

std::size_t column(const CompareTable& t, const std::string& label) {
  for (std::size_t c = 0; c < t.columns.size(); ++c)
    if (t.columns[c].label == label) return c;
  FAIL("no column " << label);
  return 0;
}

std::size_t row(const CompareTable& t, const std::string& kernel) {
  for (std::size_t r = 0; r < t.rows.size(); ++r)
    if (t.rows[r].kernel == kernel) return r;
  FAIL("no row " << kernel);
  return 0;
}

std::string bytes_of(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

} // namespace

TEST_CASE("the shipped published figures parse, name their document and map onto the material", "[compare][published]") {
  const auto rows = published();
  REQUIRE(rows.size() == 92);
  std::map<std::string, std::size_t> per_doc;
  for (const auto& r : rows) {
    CAPTURE(r.doc, r.gpu, r.kernel);
    ++per_doc[r.doc.substr(0, 3)];
    CHECK(r.time_ms > 0);
    CHECK(r.n > 0);
    CHECK(published_label(r).starts_with("published: "));
    CHECK_THAT(published_label(r), Catch::EndsWith("(" + r.doc + ")"));
    if (r.order == 0) {
      CHECK_THAT(r.kernel, Catch::StartsWith("CPU"));
      continue;
    }
    // Every kernel row is a kernel of tuner/material.h, of the same document and position.
    bool found = false;
    for (const MaterialKernel& k : material_kernels())
      if (k.doc == r.doc && k.name == r.kernel) {
        found = true;
        CHECK(k.order == r.order);
      }
    CHECK(found);
  }
  CHECK(per_doc == std::map<std::string, std::size_t>{{"000", 9}, {"001", 5}, {"002", 16}, {"003", 10}, {"004", 52}});
  CHECK(published_label(rows[9]) == "published: GPU not named (001_408b803bf385d235.txt)");
}

TEST_CASE("malformed published CSV is refused with the line", "[compare][published]") {
  const std::string header = "doc,gpu,arch,kernel,order,dtype,n,block,time_ms,gbps,step_speedup,cumulative_speedup,note\n";
  CHECK(parse_published_csv(header).empty());
  const auto ok = parse_published_csv(header + "d.txt,G,,\"k, with comma\",1,int32,2^24,,1.5,,,,\"a \"\"quoted\"\"\nnote\"\n");
  REQUIRE(ok.size() == 1);
  CHECK(ok[0].kernel == "k, with comma");
  CHECK(ok[0].note == "a \"quoted\"\nnote");
  CHECK(ok[0].n == 16777216);
  CHECK(ok[0].block == 0);
  CHECK(std::isnan(ok[0].gbps));
  CHECK_THROWS_WITH(parse_published_csv(header + "d.txt,G,,k,1,int32,2^24,,1.5,,,\n"), Catch::Contains("line 2"));
  CHECK_THROWS_WITH(parse_published_csv(header + "d.txt,G,,k,1,int32,2^24,,fast,,,,\n"),
                    Catch::Contains("time_ms 'fast' is not a number"));
  CHECK_THROWS_WITH(parse_published_csv(header + "d.txt,G,,k,1,int8,2^24,,1,,,,\n"), Catch::Contains("dtype"));
  CHECK_THROWS_WITH(parse_published_csv("doc,gpu\n"), Catch::Contains("no column 'arch'"));
}

TEST_CASE("the default document follows the problem", "[compare]") {
  const auto p = published();
  CHECK(default_doc("float32", kN, p) == kDoc4);
  CHECK(default_doc("int32", 1 << 24, p) == "000_87c89a01dbc85d13.txt");
  CHECK(default_doc("int32", 1 << 22, p) == "001_408b803bf385d235.txt");
  CHECK(default_doc("float64", 1 << 22, p) == kDoc4);
}

TEST_CASE("compare: rows are the document's kernels, columns the GPUs, then the published tables", "[compare]") {
  const CompareTable t = compare_table(fixture(), published(), CompareOptions{});
  CHECK(t.doc == kDoc4);
  // Rows: the ten kernels in the document's order and names, then its CPU rows.
  REQUIRE(t.rows.size() == 12);
  CHECK(t.rows[0].kernel == "atomic global");
  CHECK(t.rows[0].key == "atomic_global.b256.atomic");
  CHECK(t.rows[9].kernel == "multi seq");
  for (std::size_t r = 0; r < 10; ++r) CHECK(t.rows[r].order == int(r) + 1);
  CHECK(t.rows[10].kernel == "CPU baseline");
  CHECK(t.rows[10].order == 0);
  CHECK(t.rows[11].kernel == "CPU parallel baseline");
  // Columns: the GPUs with a measurement of the problem (not the idle one), then 5 published.
  REQUIRE(t.columns.size() == 7);
  CHECK(t.columns[0].label == "NVIDIA H200");
  CHECK(t.columns[1].label == "Titan V");
  for (std::size_t c = 2; c < 7; ++c) {
    CHECK(t.columns[c].published);
    CHECK(t.columns[c].doc == kDoc4);
    CHECK_THAT(t.columns[c].label, Catch::StartsWith("published: ") && Catch::EndsWith("(" + std::string(kDoc4) + ")"));
  }
  const std::size_t h200 = 0, titan = 1, pub_titan = column(t, "published: Titan V (" + std::string(kDoc4) + ")");

  // Measured cells: the best valid measurement of exactly the document's configuration.
  const CompareCell& shared = t.cells[row(t, "reduction")][h200];
  CHECK(shared.present);
  CHECK(shared.ms == Approx(0.7));
  CHECK(shared.measurements == 2);
  CHECK(shared.key == "neighbored.b256.atomic");
  CHECK(shared.pct_peak == Approx(double(kN) * 4 / 700 / 1e3 / 48.14));
  const CompareCell& conflicts = t.cells[row(t, "anti conflicts")][h200];
  CHECK(conflicts.ms == Approx(0.4)); // the failed 100 us one is never used; b512 is another configuration
  CHECK_FALSE(t.cells[row(t, "dual load")][h200].present); // only measured at another n and dtype
  // Speedups per GPU: over the previous row with a figure, and over the first.
  CHECK(t.cells[0][h200].step != t.cells[0][h200].step); // NaN on the first row
  CHECK(t.cells[1][h200].step == Approx(20.0));
  CHECK(t.cells[2][h200].step == Approx(4000.0 / 700));
  CHECK(t.cells[2][h200].cumulative == Approx(80000.0 / 700));
  CHECK(t.cells[2][titan].step == Approx(30.0)); // the Titan V has no row 2: step over row 1
  // The best of all configurations per GPU.
  CHECK(t.best[h200].key == "vectorized.b512.u4.v4.g0.shfl.atomic");
  CHECK(t.best[h200].ms == Approx(0.25));
  CHECK(t.best[h200].cumulative == Approx(320.0));
  CHECK(t.best[h200].measurements == 8);

  // Published cells: the document's figures, never a measurement, never mixed with the measured
  // Titan V of the same name.
  const CompareCell& p = t.cells[row(t, "reduction")][pub_titan];
  CHECK(p.present);
  CHECK(p.key.empty());
  CHECK(p.measurements == 0);
  CHECK(std::isnan(p.pct_peak));
  CHECK(p.ms != t.cells[row(t, "reduction")][titan].ms);
  CHECK_FALSE(t.best[pub_titan].present);
  CHECK(t.cells[10][pub_titan].present); // the CPU baseline, published on the Titan V's host
  CHECK(std::isnan(t.cells[10][pub_titan].step));
  CHECK_FALSE(t.cells[10][h200].present);
  for (std::size_t c = 2; c < 7; ++c) CHECK(t.cells[row(t, "atomic global")][c].present);
  // Printed speedups kept apart from computed ones.
  const CompareCell& shuffle = t.cells[row(t, "shuffle")][pub_titan];
  CHECK_FALSE(std::isnan(shuffle.printed_cumulative));
  CHECK_FALSE(std::isnan(shuffle.cumulative));
}

TEST_CASE("compare: tuned rows, other documents, no published tables", "[compare]") {
  CompareOptions o;
  o.config = RowConfig::tuned;
  const CompareTable tuned = compare_table(fixture(), {}, o);
  REQUIRE(tuned.columns.size() == 2); // published tables left out
  CHECK(tuned.rows.size() == 10);     // and with them the CPU rows
  const CompareCell& c = tuned.cells[4][0];
  CHECK(c.key == "interleaved.b512.atomic");
  CHECK(c.ms == Approx(0.3));

  o = {};
  o.dtype = DType::i32, o.n = 1 << 24, o.doc = "000";
  const CompareTable lecture = compare_table(fixture(), published(), o);
  CHECK(lecture.doc == "000_87c89a01dbc85d13.txt");
  CHECK(lecture.rows.front().kernel == "reduceNeighboredGmem_1");
  REQUIRE(lecture.columns.size() == 1);
  CHECK(lecture.columns[0].label == "published: Tesla K20m (000_87c89a01dbc85d13.txt)");
  CHECK(lecture.cells[0][0].ms == Approx(4.1238));
  CHECK(lecture.cells[1][0].step == Approx(4.1238 / 3.4246));

  o.doc = "999";
  CHECK_THROWS_AS(compare_table(fixture(), published(), o), std::invalid_argument);
}

TEST_CASE("compare: two GPUs of one name are told apart", "[compare]") {
  auto gpus = fixture();
  gpus[1].device.name = "NVIDIA H200";
  const CompareTable t = compare_table(gpus, {}, CompareOptions{});
  REQUIRE(t.columns.size() == 2);
  CHECK(t.columns[0].label == "NVIDIA H200 (GPU-h200)");
  CHECK(t.columns[1].label == "NVIDIA H200 (GPU-titan)");
}

TEST_CASE("compare formats: md, csv and json label published columns", "[compare]") {
  const CompareTable t = compare_table(fixture(), published(), CompareOptions{});
  const std::string md = format_compare(t, Format::md);
  CHECK_THAT(md, Catch::Contains("| published: Titan V (004_012f064147cfd0ff.txt) |") &&
                     Catch::Contains("| 3 | reduction | `neighbored.b256.atomic` | 0.7000 ms, 1533.9 GB/s (31.9%), 5.71x / 114.29x |") &&
                     Catch::Contains("`vectorized.b512.u4.v4.g0.shfl.atomic` 0.2500 ms"));
  const std::string csv = format_compare(t, Format::csv);
  std::size_t measured = 0, published_lines = 0;
  for (std::size_t at = 0; (at = csv.find(",measured,", at)) != std::string::npos; ++at) ++measured;
  for (std::size_t at = 0; (at = csv.find(",published,", at)) != std::string::npos; ++at) ++published_lines;
  CHECK(measured == 5 + 1 + 2 + 1);         // H200: 5 rows + best; Titan V: 2 rows + best
  CHECK(published_lines == 10 + 2 + 4 * 10); // Titan V: 10 kernels + 2 CPU rows; 4 GPUs x 10 kernels
  const std::string json = format_compare(t, Format::json);
  CHECK_THAT(json, Catch::Contains("\"source\": \"published\"") && Catch::Contains("\"source\": \"measured\"") &&
                       Catch::Contains("\"label\": \"published: GTX 780 (004_012f064147cfd0ff.txt)\""));
  CHECK(std::count(json.begin(), json.end(), '{') == std::count(json.begin(), json.end(), '}'));
}

TEST_CASE("bandwidth curves: the best configuration per size and GPU", "[compare][plot]") {
  auto gpus = fixture();
  gpus[0].measurements.push_back(meas("vectorized.b512.u4.v4.g0.shfl.atomic", 5, 1 << 20));
  const auto curves = bandwidth_curves(gpus, DType::f32, Op::sum);
  REQUIRE(curves.size() == 3);
  CHECK(curves[0].label == "NVIDIA H200");
  REQUIRE(curves[0].points.size() == 3); // 2^20, 2^27, 2^28
  CHECK(curves[0].points[0].first == 1u << 20);
  CHECK(curves[0].points[2].second == Approx(double(kN) * 4 / 250 / 1e3));
  CHECK(bandwidth_curves(gpus, DType::f64, Op::sum).empty());
}

TEST_CASE("plots: a PNG and an SVG with gnuplot", "[compare][plot]") {
  if (std::system("gnuplot --version >/dev/null 2>&1") != 0) {
    WARN("gnuplot not found: plot test skipped (apt-get install gnuplot-nox)");
    return;
  }
  std::random_device rd;
  const fs::path dir = fs::temp_directory_path() / ("reduce-tune-plot-test-" + std::to_string(rd()));
  fs::create_directories(dir);
  const auto gpus = fixture();
  const CompareTable t = compare_table(gpus, published(), CompareOptions{});
  plot_compare(t, bandwidth_curves(gpus, DType::f32, Op::sum), (dir / "cmp.png").string());
  const std::string png = bytes_of(dir / "cmp.png");
  CHECK(png.size() > 10000);
  CHECK(png.substr(0, 8) == "\x89PNG\r\n\x1a\n");
  plot_compare(t, bandwidth_curves(gpus, DType::f32, Op::sum), (dir / "cmp.svg").string());
  const std::string svg = bytes_of(dir / "cmp.svg");
  CHECK_THAT(svg, Catch::Contains("<svg") && Catch::Contains("NVIDIA H200") && Catch::Contains("published: Titan V"));
  // Nothing measured: still a plot, of the published staircase.
  plot_compare(compare_table({}, published(), CompareOptions{}), {}, (dir / "empty.png").string());
  CHECK(fs::file_size(dir / "empty.png") > 1000);
  CHECK_THROWS_WITH(plot_compare(t, {}, (dir / "x.pdf").string()), Catch::Contains(".png or .svg"));
  CHECK_THROWS_WITH(plot_compare(t, {}, (dir / "y.png").string(), "no-such-gnuplot"), Catch::Contains("cannot run"));
  fs::remove_all(dir);
}

TEST_CASE("static comparison: the material's kernels compiled per architecture", "[compare][nvrtc]") {
  Nvrtc nvrtc;
  CHECK_THROWS_WITH(static_targets({"sm_35"}, {&nvrtc}), Catch::Contains("no NVRTC given targets sm_35"));
  const auto targets = static_targets({"sm_90", "90"}, {&nvrtc});
  REQUIRE(targets.size() == 2);
  CHECK(targets[1].arch == "sm_90");
  const StaticTable t = static_table({targets[0]}, "004", DType::f32, Op::sum, 0);
  REQUIRE(t.rows.size() == 10);
  CHECK(t.rows[0].kernel == "004 atomic global");
  for (std::size_t r = 0; r < t.rows.size(); ++r) {
    const StaticCell& c = t.cells[r][0];
    CAPTURE(t.rows[r].key, c.error);
    CHECK(c.error.empty());
    CHECK(c.registers > 0);
    CHECK(c.spill_stores >= 0);
    CHECK(c.instructions == c.code_bytes / 16);
    CHECK(c.instructions > 10);
  }
  // A key shared by several documents is one row naming them all.
  const StaticTable all = static_table({targets[0]}, "", DType::i32, Op::sum, 0);
  std::set<std::string> keys;
  for (const auto& r : all.rows) CHECK(keys.insert(r.key).second);
  bool shared = false;
  for (const auto& r : all.rows) shared |= r.key == "unrolling.b512.u8.host" && r.kernel.find("002 reduceUnrolling8; 003 reduceUnrolling8") != std::string::npos;
  CHECK(shared);
  const std::string md = format_static(t, Format::md);
  CHECK_THAT(md, Catch::Contains("sm_90 (NVRTC " + nvrtc.version() + ")"));
  CHECK_THAT(format_static(t, Format::csv), Catch::StartsWith("kernel,key,arch,nvrtc,registers"));
}
