// reduce-tune: compare, merge and import-reference on the command line.
#include "tuner/cli_compare.h"

#include "tuner/cli.h"

#include "db/store.h"
#include "kernels/nvrtc.h"
#include "tuner/compare.h"
#include "tuner/sizes.h"

#include <boost/program_options.hpp>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <thread>

namespace reduce_tune {
namespace {

namespace po = boost::program_options;

using cli::parse;
using cli::parse_format;
using cli::split;

[[noreturn]] void usage(const std::string& what) { throw cli::Usage(what); }

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

/// The published rows: from --reference FILE, else the store's table (import-reference), else the
/// copy embedded in this build. `source` says which.
std::vector<db::PublishedRecord> load_published(const std::string& file, const db::Store* store, std::string& source) {
  if (!file.empty()) {
    source = file;
    return parse_published_csv(read_file(file));
  }
  if (store) {
    auto rows = store->published();
    if (!rows.empty()) {
      source = "the store (import-reference)";
      return rows;
    }
  }
  source = "data/published.csv as built in";
  return parse_published_csv(embedded_published_csv());
}

int compare_static(const std::string& archs, const std::vector<std::string>& nvrtc_paths, const std::string& doc,
                   const std::string& dtype, const std::string& op, unsigned threads, Format fmt) {
  const auto d = parse_dtype(dtype);
  const auto o = parse_op(op);
  if (!d) usage("unknown dtype '" + dtype + "'");
  if (!o) usage("unknown op '" + op + "'");
  std::vector<std::unique_ptr<Nvrtc>> libs;
  for (const auto& p : nvrtc_paths.empty() ? std::vector<std::string>{""} : nvrtc_paths)
    libs.push_back(std::make_unique<Nvrtc>(p));
  std::vector<const Nvrtc*> raw;
  for (const auto& l : libs) raw.push_back(l.get());
  std::vector<StaticTarget> targets;
  try {
    targets = static_targets(split(archs), raw);
  } catch (const std::invalid_argument& e) {
    usage(e.what());
  }
  for (const auto& t : targets)
    std::fprintf(stderr, "%s: NVRTC %s (%s)\n", t.arch.c_str(), t.nvrtc->version().c_str(), t.nvrtc->path().c_str());
  StaticTable table;
  try {
    table = static_table(targets, doc, *d, *o, threads);
  } catch (const std::invalid_argument& e) {
    usage(e.what());
  }
  std::cout << format_static(table, fmt);
  std::size_t failed = 0;
  for (const auto& row : table.cells)
    for (const auto& c : row) failed += c.error.starts_with("compile failed") || c.error.starts_with("cubin");
  if (failed) std::fprintf(stderr, "%zu compiles failed\n", failed);
  return failed ? 1 : 0;
}

} // namespace

int cmd_compare(const std::vector<std::string>& args) {
  po::options_description desc("reduce-tune compare options");
  std::string dtype = "float32", op = "sum", n_text = "2^28", doc, config = "material", db_path, format = "md",
              plot, reference, archs = "sm_35,sm_61,sm_75,sm_90,sm_120";
  std::vector<std::string> nvrtc_paths;
  bool no_published = false, is_static = false;
  unsigned threads = std::max(1u, std::thread::hardware_concurrency());
  desc.add_options()
    ("help,h", "this help")
    ("dtype", po::value(&dtype)->default_value(dtype), "dtype")
    ("op", po::value(&op)->default_value(op), "op")
    ("n", po::value(&n_text)->default_value(n_text), "number of elements, e.g. 2^28")
    ("doc", po::value(&doc), "the document whose kernels make the rows (e.g. 000, 004; default: the one "
                             "whose published tables have this dtype and n)")
    ("config", po::value(&config)->default_value(config),
     "material: each row at the document's own configuration; tuned: the fastest configuration of its variant")
    ("db", po::value(&db_path), "tuning database (default $REDUCE_TUNE_DB or the XDG data dir)")
    ("format", po::value(&format)->default_value(format), "md, csv or json")
    ("plot", po::value(&plot), "also draw FILE.png or FILE.svg with gnuplot: GB/s against size per GPU and "
                               "the material's staircase per GPU")
    ("no-published", po::bool_switch(&no_published), "leave out the published tables")
    ("reference", po::value(&reference), "published figures from this CSV (default: the store's, else the "
                                         "built-in data/published.csv)")
    ("static", po::bool_switch(&is_static), "compile the material's kernels for several architectures and "
                                            "tabulate registers, spills, shared memory and instructions (no GPU)")
    ("arch", po::value(&archs)->default_value(archs), "--static: architectures")
    ("nvrtc", po::value(&nvrtc_paths)->composing(), "--static: an NVRTC library; repeat for several (each "
                                                    "architecture uses the newest that targets it)")
    ("threads", po::value(&threads)->default_value(threads), "--static: parallel compiles");
  auto vm = parse(args, desc);
  if (cli::help_asked(vm, desc)) return 0;
  const Format fmt = parse_format(format);
  if (is_static) return compare_static(archs, nvrtc_paths, doc, dtype, op, threads, fmt);
  CompareOptions o;
  const auto d = parse_dtype(dtype);
  const auto op_ = parse_op(op);
  if (!d) usage("unknown dtype '" + dtype + "'");
  if (!op_) usage("unknown op '" + op + "'");
  o.dtype = *d, o.op = *op_;
  std::string why;
  const auto n = parse_size(n_text, &why);
  if (!n) usage(why);
  o.n = *n;
  if (config == "material") o.config = RowConfig::material;
  else if (config == "tuned") o.config = RowConfig::tuned;
  else usage("unknown --config '" + config + "' (material or tuned)");
  if (const auto ext = std::filesystem::path(plot).extension(); !plot.empty() && ext != ".png" && ext != ".svg")
    usage("--plot '" + plot + "' must end in .png or .svg");

  const std::string path = db_path.empty() ? db::default_store_path() : db_path;
  std::unique_ptr<db::Store> store;
  std::vector<GpuData> gpus;
  if (std::filesystem::exists(path)) { // compare never creates a store
    store = std::make_unique<db::Store>(path);
    for (const auto& d : store->devices()) gpus.push_back({d, store->measurements(d.uuid, {o.dtype, o.op, Problem::array, std::nullopt})});
  } else {
    std::fprintf(stderr, "no tuning database at %s: published figures only\n", path.c_str());
  }
  std::string source;
  auto published = load_published(reference, store.get(), source);
  if (o.doc.empty()) o.doc = doc.empty() ? default_doc(dtype, o.n, published) : doc;
  if (no_published) published.clear();
  else std::fprintf(stderr, "published figures: %zu rows from %s\n", published.size(), source.c_str());
  CompareTable t;
  try {
    t = compare_table(gpus, published, o);
  } catch (const std::invalid_argument& e) {
    usage(e.what());
  }
  std::cout << format_compare(t, fmt);
  std::size_t measured = 0;
  for (const auto& c : t.columns) measured += !c.published;
  if (!measured)
    std::fprintf(stderr, "no GPU in %s has a valid measurement of %s %s n=%s\n", path.c_str(), dtype.c_str(),
                 op.c_str(), format_size(o.n).c_str());
  if (!plot.empty()) {
    plot_compare(t, bandwidth_curves(gpus, o.dtype, o.op), plot);
    std::fprintf(stderr, "plot: %s\n", plot.c_str());
  }
  return 0;
}

int cmd_merge(const std::vector<std::string>& args) {
  po::options_description desc("reduce-tune merge options (reduce-tune merge OTHER.db...)");
  std::string db_path;
  std::vector<std::string> others;
  desc.add_options()
    ("help,h", "this help")
    ("db", po::value(&db_path), "the tuning database to merge into (default $REDUCE_TUNE_DB or the XDG data dir)")
    ("other", po::value(&others)->composing(), "a database to bring in (positional)");
  po::positional_options_description pos;
  pos.add("other", -1);
  auto vm = parse(args, desc, &pos);
  if (cli::help_asked(vm, desc)) return 0;
  if (others.empty()) usage("merge needs at least one database to bring in (reduce-tune merge OTHER.db)");
  const std::string path = db_path.empty() ? db::default_store_path() : db_path;
  db::Store store(path);
  for (const auto& other : others) {
    const db::MergeStats s = store.merge_from(other);
    std::printf("%s -> %s: %zu new devices, %zu new runs, %zu new measurements (%zu already here), "
                "%zu new published rows, %zu new recorded call points\n",
                other.c_str(), path.c_str(), s.devices, s.runs, s.measurements, s.duplicates, s.published,
                s.recorded);
  }
  return 0;
}

int cmd_import_reference(const std::vector<std::string>& args) {
  po::options_description desc("reduce-tune import-reference options");
  std::string db_path, file;
  desc.add_options()
    ("help,h", "this help")
    ("file", po::value(&file), "the CSV to load (default: data/published.csv as built in)")
    ("db", po::value(&db_path), "tuning database (default $REDUCE_TUNE_DB or the XDG data dir)");
  auto vm = parse(args, desc);
  if (cli::help_asked(vm, desc)) return 0;
  const auto rows = file.empty() ? parse_published_csv(embedded_published_csv()) : parse_published_csv(read_file(file));
  const std::string path = db_path.empty() ? db::default_store_path() : db_path;
  db::Store store(path);
  const std::size_t changed = store.import_published(rows);
  std::printf("%zu published rows from %s: %zu new or changed in %s (labelled \"published\", never measurements)\n",
              rows.size(), file.empty() ? "data/published.csv (built in)" : file.c_str(), changed, path.c_str());
  return 0;
}

} // namespace reduce_tune
