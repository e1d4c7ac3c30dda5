// reduce-tune: the commands that report what is there: query (the stored best for a problem, or
// with --lookup the library's graded choice), devices (the GPUs of this machine), nvrtc (the NVRTC
// library and its architectures).
#include "tuner/cli_info.h"

#include "db/store.h"
#include "kernels/driver.h"
#include "kernels/nvrtc.h"
#include "runtime/lookup.h"
#include "kernels/user_op.h"
#include "runtime/shipped.h"
#include "runtime/user_lookup.h"
#include "tuner/cli.h"
#include "tuner/cli_reduction.h"
#include "tuner/sizes.h"
#include "tuner/sweep.h"

#include <boost/program_options.hpp>

#include <cstdio>
#include <iostream>
#include <memory>
#include <optional>

namespace po = boost::program_options;

namespace reduce_tune {

using cli::Usage;
using cli::parse;
using cli::parse_n;
using cli::parse_shapes;
using cli::problem_option;

namespace {

/// query --lookup: what the library would run for the point on that device (Reducer::config_for),
/// from the store at `path` if it exists (never created here) and the shipped tuning.
int print_lookup(const std::string& path, const std::string& uuid, int device, const db::Measurement& asked,
                 const std::string& reduction_file) {
  auto src = lookup_sources(path, uuid, device);
  if (!src) return 1;
  const auto& [store, shipped, why_store, why_shipped, gpu] = *src;
  Requirements req; // as the calls ask: 1-D sum/min/max may finish on the host, segmented ones not
  req.device_result = asked.problem != Problem::array;
  Choice c;
  if (asked.user) {
    // A user reduction: its description from --reduction, else as the store keeps it.
    std::shared_ptr<const UserOp> u;
    if (!reduction_file.empty()) {
      u = cli::user_reduction(reduction_file, {asked.dtype});
    } else {
      std::optional<db::ReductionRecord> r;
      for (const db::Store* st : {store.get(), shipped.get()})
        if (st && !r) r = st->reduction(*asked.user);
      if (!r) {
        std::fprintf(stderr, "%s: no description of it in %s (give --reduction FILE)\n",
                     asked.op_key().name().c_str(), path.c_str());
        return 1;
      }
      u = make_user_op(parse_reduction(r->text));
    }
    c = lookup_user(store.get(), shipped.get(), gpu, *u, asked.dtype, asked.problem, lookup_point(asked.shape()),
                    Requirements{.device_result = true}, "no tuning store (" + why_store + ")");
  } else {
    c = lookup(store.get(), shipped.get(), gpu, asked.dtype, asked.op, asked.problem, lookup_point(asked.shape()),
               req, "no tuning store (" + why_store + ")");
  }
  std::printf("%s: %s -> %s  %s", gpu.name.c_str(), point_text(asked).c_str(), key(c.config).c_str(),
              std::string(name(c.match)).c_str());
  if (c.match != Match::builtin) { // where it was measured (for `related`, the note says for what)
    const std::string at = asked.problem == Problem::array
                               ? "n=" + format_size(c.tuned_shape.length)
                               : format_size(c.tuned_shape.count) + " x " + format_size(c.tuned_shape.length);
    std::printf(" (%.2f us at %s on %s)", c.median_us, at.c_str(), c.device_name.c_str());
  }
  if (!c.note.empty()) std::printf("; %s", c.note.c_str());
  std::printf("\n");
  return 0;
}

} // namespace

std::optional<LookupSources> lookup_sources(const std::string& path, const std::string& uuid, int device) {
  LookupSources s;
  s.store = open_existing_store(path, &s.why_store);
  s.shipped = open_shipped_store(&s.why_shipped);
  if (device >= 0) {
    s.gpu = device_key(cuda::device_info(device));
    return s;
  }
  std::optional<db::DeviceRecord> d;
  for (const db::Store* st : {s.store.get(), s.shipped.get()})
    if (st && !d) d = st->device(uuid);
  if (!d) {
    std::fprintf(stderr, "no device %s in %s%s\n", uuid.c_str(), path.c_str(),
                 s.shipped ? " or the shipped tuning" : (" (" + s.why_store + "; " + s.why_shipped + ")").c_str());
    return std::nullopt;
  }
  s.gpu = device_key(*d);
  return s;
}

int cmd_query(const std::vector<std::string>& args) {
  po::options_description desc("reduce-tune query options");
  std::string db_path, dtype_text = "float32", op_text = "sum", n_text, uuid, problem_text = "array", shape_text,
      reduction_file;
  int device = -1;
  bool lookup_mode = false;
  desc.add_options()
    ("help,h", "this help")
    ("lookup", po::bool_switch(&lookup_mode),
     "the configuration the library would use (Reducer::config_for): this store, then the shipped "
     "tuning, graded (exact, nearest_size, shipped, same_arch, related, builtin); needs --uuid "
     "(as stored, or the shipped tuning's model:NAME) or --device")
    ("device", po::value(&device), "GPU ordinal (needs the GPU to read its UUID)")
    ("uuid", po::value(&uuid), "GPU UUID as stored (works without a GPU)")
    ("dtype", po::value(&dtype_text)->default_value(dtype_text), "dtype")
    ("op", po::value(&op_text)->default_value(op_text), "op, or a user reduction's name (user:<hash>)")
    ("reduction", po::value(&reduction_file), "a user reduction's file (in place of --op)")
    ("problem", po::value(&problem_text)->default_value(problem_text), "array, rows, columns or segments")
    ("n", po::value(&n_text), "array problem: number of elements, e.g. 1000000 or 2^20")
    ("shape", po::value(&shape_text), "segmented problems: ROWSxCOLS (rows, columns) or SEGMENTSxMEAN")
    ("db", po::value(&db_path), "tuning database");
  auto vm = parse(args, desc);
  if (cli::help_asked(vm, desc)) return 0;
  const Problem problem = problem_option(problem_text);
  Shape shape;
  if (problem == Problem::array) {
    if (n_text.empty()) throw Usage("query needs --n");
    if (!shape_text.empty()) throw Usage("--shape is for --problem rows, columns or segments");
    shape = {1, parse_n(n_text)};
  } else {
    if (shape_text.empty()) throw Usage("query --problem " + problem_text + " needs --shape");
    if (!n_text.empty()) throw Usage("--n is for the array problem; --shape gives a segmented shape");
    const auto shapes = parse_shapes(shape_text, problem);
    if (shapes.size() != 1) throw Usage("--shape takes one shape");
    shape = shapes[0];
  }
  const auto dtype = parse_dtype(dtype_text);
  std::optional<db::OpKey> op = db::parse_op_key(op_text);
  if (!dtype) throw Usage("unknown dtype '" + dtype_text + "'");
  if (!reduction_file.empty()) {
    if (vm.count("op") && !vm["op"].defaulted()) throw Usage("give --op or --reduction, not both");
    op = db::OpKey::user(cli::user_reduction(reduction_file, {*dtype})->hash);
  }
  if (!op) throw Usage("unknown op '" + op_text + "'");
  const std::string path = db_path.empty() ? db::default_store_path() : db_path;
  if (lookup_mode) {
    if (device < 0 && uuid.empty()) throw Usage("query --lookup needs --uuid or --device");
    db::Measurement asked;
    asked.dtype = *dtype, asked.op = op->builtin().value_or(Op::sum), asked.user = op->hash(), asked.problem = problem;
    asked.count = shape.count, asked.n = shape.length;
    return print_lookup(path, uuid, device, asked, reduction_file);
  }
  if (device >= 0) uuid = cuda::device_info(device).uuid;
  db::Store store(path);
  std::vector<db::DeviceRecord> devs;
  if (!uuid.empty()) {
    auto d = store.device(uuid);
    if (!d) {
      std::fprintf(stderr, "no tuning stored for %s in %s\n", uuid.c_str(), path.c_str());
      return 1;
    }
    devs.push_back(*d);
  } else {
    devs = store.devices();
  }
  db::Measurement asked;
  asked.dtype = *dtype, asked.op = op->builtin().value_or(Op::sum), asked.user = op->hash(), asked.problem = problem;
  asked.count = shape.count, asked.n = shape.length;
  int found = 0;
  for (const auto& d : devs) {
    auto b = store.nearest(d.uuid, *dtype, *op, problem, shape);
    if (!b) continue;
    ++found;
    std::printf("%s (%s): %s -> %s  %.2f us  %.1f GB/s  %.1f%% of peak%s\n", d.name.c_str(), d.uuid.c_str(),
                point_text(asked).c_str(), b->m.key.c_str(), b->m.median_us, b->m.gbps, b->m.pct_peak,
                b->shape == shape ? "  (tuned at this shape)" : ("  (nearest tuned: " + point_text(b->m) + ")").c_str());
  }
  if (!found) {
    std::fprintf(stderr, "no tuning stored for %s in %s\n", point_text(asked).c_str(), path.c_str());
    return 1;
  }
  return 0;
}

int cmd_devices(const std::vector<std::string>& args) {
  po::options_description desc("reduce-tune devices options");
  std::string db_path;
  desc.add_options()("help,h", "this help")("db", po::value(&db_path), "tuning database");
  auto vm = parse(args, desc);
  if (cli::help_asked(vm, desc)) return 0;
  std::string why;
  if (!cuda::available(&why)) {
    std::fprintf(stderr, "%s\n", why.c_str());
    return 1;
  }
  for (int i = 0; i < cuda::device_count(); ++i) {
    const auto d = cuda::device_info(i);
    std::printf("%d  %s  %s  sm_%d%d  %d SMs  %.0f MiB L2  %.1f GiB  peak %.0f GB/s  driver %d\n", i,
                d.name.c_str(), d.uuid.c_str(), d.cc_major, d.cc_minor, d.sm_count,
                double(d.l2_bytes) / (1 << 20), double(d.total_mem) / (1 << 30), d.peak_gbps(),
                d.driver_version);
  }
  return 0;
}

int cmd_nvrtc(const std::vector<std::string>& args) {
  po::options_description desc("reduce-tune nvrtc options");
  std::string path;
  desc.add_options()("help,h", "this help")("nvrtc", po::value(&path), "NVRTC library");
  auto vm = parse(args, desc);
  if (cli::help_asked(vm, desc)) return 0;
  Nvrtc nvrtc(path);
  std::printf("NVRTC %s (%s)\narchitectures:", nvrtc.version().c_str(), nvrtc.path().c_str());
  for (int a : nvrtc.archs()) std::printf(" sm_%d", a);
  std::printf("\n");
  return 0;
}

} // namespace reduce_tune
