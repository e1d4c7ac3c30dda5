// reduce-tune variants and compile: the catalogue listed and compiled, from the command line.
#include "tuner/cli_catalogue.h"

#include "kernels/catalogue.h"
#include "kernels/nvrtc.h"
#include "kernels/runner.h"
#include "tuner/cli.h"
#include "tuner/cubin.h"
#include "tuner/material.h"

#include <boost/program_options.hpp>

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>
#include <thread>

namespace po = boost::program_options;

namespace reduce_tune::cli {

void check_variants(const std::vector<std::string>& names, Problem problem) {
  for (const auto& v : names) {
    const Variant* var = find_variant(v);
    if (!var) throw Usage("unknown variant '" + v + "' (see: reduce-tune variants)");
    if (var->problem != problem)
      throw Usage("variant '" + v + "' reduces " + std::string(name(var->problem)) + ", not " +
                  std::string(name(problem)) + " (see: reduce-tune variants --problem " +
                  std::string(name(problem)) + ")");
  }
}

} // namespace reduce_tune::cli

namespace reduce_tune {

using cli::Usage;
using cli::check_variants;
using cli::parse;
using cli::parse_list;
using cli::problem_option;
using cli::split;

int cmd_variants(const std::vector<std::string>& args) {
  po::options_description desc("reduce-tune variants options");
  std::string arch, dtype = "float32", op = "sum", problem = "array";
  bool material = false, unsafe = false, all = false;
  desc.add_options()
    ("help,h", "this help")
    ("material", po::bool_switch(&material), "the material's kernel names and their keys")
    ("all", po::bool_switch(&all), "every point of the space, with the reason for invalid ones")
    ("arch", po::value(&arch), "check validity for sm_XX (default sm_90)")
    ("dtype", po::value(&dtype)->default_value(dtype), "dtype for validity")
    ("op", po::value(&op)->default_value(op), "op for validity")
    ("problem", po::value(&problem)->default_value(problem), "array, rows, columns or segments")
    ("unsafe-tails", po::bool_switch(&unsafe), "admit the volatile tail on sm_70+");
  auto vm = parse(args, desc);
  if (cli::help_asked(vm, desc)) return 0;
  if (material) {
    std::printf("%-28s %-36s %s\n", "document", "kernel", "configuration key");
    for (const auto& k : material_kernels())
      std::printf("%-28.*s %-36.*s %.*s%s%.*s\n", int(k.doc.size()), k.doc.data(), int(k.name.size()),
                  k.name.data(), int(k.key.size()), k.key.data(), k.note.empty() ? "" : "  # ",
                  int(k.note.size()), k.note.data());
    return 0;
  }
  Target t;
  auto d = parse_dtype(dtype);
  auto o = parse_op(op);
  if (!d) throw Usage("unknown dtype '" + dtype + "'");
  if (!o) throw Usage("unknown op '" + op + "'");
  t.dtype = *d, t.op = *o, t.allow_unsafe = unsafe, t.problem = problem_option(problem);
  if (!arch.empty()) {
    const auto digits = arch.find_first_of("0123456789");
    try {
      t.cc = std::stoi(arch.substr(digits == std::string::npos ? arch.size() : digits));
    } catch (const std::exception&) {
      throw Usage("'" + arch + "' is not an architecture (expected e.g. sm_90)");
    }
  }
  for (const Variant& v : variants(t.problem)) {
    std::size_t valid = 0;
    std::map<std::string, std::size_t> reasons;
    for (const Config& c : space(v)) {
      auto why = invalid_reason(c, t);
      if (all) std::printf("  %-50s %s\n", key(c).c_str(), why ? ("skipped: " + *why).c_str() : "valid");
      why ? ++reasons[*why] : ++valid;
    }
    std::printf("%-32.*s %4zu valid on sm_%d  %.*s\n", int(v.name.size()), v.name.data(), valid, t.cc,
                int(v.summary.size()), v.summary.data());
    for (const auto& [why, n] : reasons) std::printf("%37zu skipped: %s\n", n, why.c_str());
  }
  return 0;
}

int cmd_compile(const std::vector<std::string>& args) {
  po::options_description desc("reduce-tune compile options");
  std::string arch = "sm_90", nvrtc_path, dtypes = "int32,float32", ops = "sum", vars, cache_dir,
              problem = "array";
  bool unsafe = false, quiet = false;
  unsigned threads = std::max(1u, std::thread::hardware_concurrency());
  desc.add_options()
    ("help,h", "this help")
    ("arch", po::value(&arch)->default_value(arch), "target, e.g. sm_75, sm_90, compute_90")
    ("nvrtc", po::value(&nvrtc_path), "NVRTC library")
    ("dtypes", po::value(&dtypes)->default_value(dtypes), "dtypes")
    ("ops", po::value(&ops)->default_value(ops), "ops")
    ("variants", po::value(&vars), "catalogue names (default: all)")
    ("problem", po::value(&problem)->default_value(problem), "array, rows, columns or segments")
    ("unsafe-tails", po::bool_switch(&unsafe), "include the volatile tail on sm_70+")
    ("threads", po::value(&threads)->default_value(threads), "parallel compiles")
    ("cache-dir", po::value(&cache_dir), "use this compile cache (default: none)")
    ("quiet", po::bool_switch(&quiet), "print only the summary and failures");
  auto vm = parse(args, desc);
  if (cli::help_asked(vm, desc)) return 0;
  const auto ds = parse_list<DType>(dtypes, parse_dtype, "dtype");
  const auto os = parse_list<Op>(ops, parse_op, "op");
  const Problem pr = problem_option(problem);
  const auto names = split(vars);
  check_variants(names, pr);
  Nvrtc nvrtc(nvrtc_path);
  ArchTarget target;
  try {
    target = nvrtc.parse_target(arch);
  } catch (const std::invalid_argument& e) {
    throw Usage(e.what());
  }
  const int cc = target.number();
  std::vector<CompileJob> jobs;
  std::set<std::string> seen;
  for (DType d : ds)
    for (Op op : os) {
      const Target t{d, op, cc, 1024, 132, unsafe, pr};
      for (const Variant& v : variants(pr)) {
        if (!names.empty() && std::find(names.begin(), names.end(), v.name) == names.end()) continue;
        for (const Config& c : space(v)) {
          // As the sweep: bf16/f16 sums' atomic finishes with the float32 result they need.
          const bool wide = valid_wide_only(c, t);
          if ((wide || !invalid_reason(c, t)) && seen.insert(render(c, d, op, wide)).second)
            jobs.push_back({c, d, op, wide});
        }
      }
    }
  CompileCache cache(cache_dir);
  KernelLoader loader(nvrtc, cache, target);
  const auto outcomes = compile_all(loader, jobs, threads);
  std::size_t failed = 0;
  if (!quiet)
    std::printf("# NVRTC %s, %s (%s); instrs: SASS instructions derived from the code size (see tuner/cubin.h)\n"
                "%-52s %-8s %-4s %4s %6s %6s %6s %6s %6s %6s\n", nvrtc.version().c_str(),
                target.arch.c_str(), target.cubin ? "cubin" : "PTX", "configuration", "dtype", "op",
                "regs", "spillS", "spillL", "smem", "stack", "bytes", "instrs");
  for (std::size_t k = 0; k < jobs.size(); ++k) {
    const bool ok = outcomes[k].error.empty();
    failed += !ok;
    if (ok && quiet) continue;
    const Resources& r = outcomes[k].compiled.resources;
    std::printf("%-52s %-8s %-4s ", key(jobs[k].config).c_str(), std::string(name(jobs[k].dtype)).c_str(),
                std::string(name(jobs[k].op)).c_str());
    if (ok) {
      long long bytes = -1, instrs = -1;
      if (target.cubin) {
        const CubinKernel ck = inspect_cubin(outcomes[k].compiled.image,
                                             pr == Problem::array ? "rt_reduce" : "rt_segmented");
        bytes = static_cast<long long>(ck.code_bytes), instrs = static_cast<long long>(ck.instructions);
      }
      std::printf("%4d %6d %6d %6d %6d %6lld %6lld\n", r.registers, r.spill_stores, r.spill_loads, r.smem_bytes,
                  r.stack_bytes, bytes, instrs);
    }
    else
      std::printf("FAILED: %s\n", outcomes[k].error.c_str());
  }
  std::printf("%zu distinct kernels for %s with NVRTC %s: %zu compiled, %zu failed\n", jobs.size(),
              target.arch.c_str(), nvrtc.version().c_str(), jobs.size() - failed, failed);
  return failed ? 1 : 0;
}

} // namespace reduce_tune
