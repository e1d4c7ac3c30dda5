// reduce-tune reduction: a user reduction's file (parse_reduction's format) checked: its name, the
// result dtype of each dtype asked, and an NVRTC compile of its kernels, so that a description is
// known to compile before a program or a sweep uses it.
#include "tuner/cli_reduction.h"

#include "kernels/user_op.h"
#include "reduce_tune/reduction.h"
#include "tuner/cli.h"

#include <boost/program_options.hpp>

#include <cstdio>
#include <fstream>
#include <sstream>

namespace po = boost::program_options;

namespace reduce_tune {

int cmd_reduction(const std::vector<std::string>& args) {
  po::options_description desc("reduce-tune reduction options (reduce-tune reduction FILE)");
  std::string file, arch, nvrtc_path;
  std::vector<std::string> dtypes;
  desc.add_options()
    ("help,h", "this help")
    ("file", po::value(&file), "the reduction: key = value lines (docs/CLI.md; positional)")
    ("dtype", po::value(&dtypes)->composing(), "an element dtype to compile it for (repeatable; default: each it takes)")
    ("arch", po::value(&arch), "architecture to compile for, e.g. sm_90 (default: the newest NVRTC targets)")
    ("nvrtc", po::value(&nvrtc_path), "the NVRTC library (default $REDUCE_TUNE_NVRTC or the one built against)");
  po::positional_options_description pos;
  pos.add("file", 1);
  auto vm = cli::parse(args, desc, &pos);
  if (cli::help_asked(vm, desc)) return 0;
  if (file.empty()) throw cli::Usage("reduction needs a file (reduce-tune reduction FILE)");
  std::ifstream in(file);
  if (!in) throw cli::Usage("cannot read " + file);
  std::ostringstream text;
  text << in.rdbuf();
  const Reduction r = parse_reduction(text.str());
  std::printf("%s (%s)\n", r.name().c_str(), file.c_str());
  std::vector<DType> todo;
  for (const std::string& d : dtypes) {
    const std::optional<DType> dt = parse_dtype(d);
    if (!dt) throw cli::Usage("unknown dtype '" + d + "'");
    todo.push_back(*dt);
  }
  if (todo.empty())
    todo = r.inputs.empty() ? std::vector<DType>{DType::i32, DType::u32, DType::i64, DType::f32,
                                                 DType::f64, DType::bf16, DType::f16}
                            : r.inputs;
  int failed = 0;
  for (DType d : todo) {
    try {
      const DType result = r.result_dtype(d);
      compile_reduction(r, d, arch, nvrtc_path);
      std::printf("  %-9s -> %-9s compiles\n", std::string(name(d)).c_str(), std::string(name(result)).c_str());
    } catch (const ReductionError& e) {
      ++failed;
      std::printf("  %-9s    %s\n", std::string(name(d)).c_str(), e.what());
    }
  }
  return failed ? 1 : 0;
}

} // namespace reduce_tune

namespace reduce_tune::cli {

std::shared_ptr<const UserOp> user_reduction(const std::string& file, const std::vector<DType>& dtypes) {
  std::ifstream in(file);
  if (!in) throw Usage("--reduction: cannot read " + file);
  std::ostringstream text;
  text << in.rdbuf();
  try {
    std::shared_ptr<const UserOp> u = make_user_op(parse_reduction(text.str()));
    for (DType d : dtypes)
      if (auto why = u->unsupported(d)) throw Usage("--reduction " + file + " (" + u->name + "): " + *why);
    return u;
  } catch (const ReductionError& e) {
    throw Usage("--reduction " + file + ": " + e.what());
  }
}

} // namespace reduce_tune::cli
