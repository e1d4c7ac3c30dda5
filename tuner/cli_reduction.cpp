// reduce-tune reduction: a user reduction's file (parse_reduction's format) checked: its name, the
// result dtype of each dtype asked, and an NVRTC compile of its kernels, so that a description is
// known to compile before a program or a sweep uses it.
#include "tuner/cli_reduction.h"

#include "kernels/additive.h"
#include "kernels/user_op.h"
#include "reduce_tune/reduction.h"
#include "tuner/check_data.h"
#include "tuner/cli.h"
#include "tuner/sweep.h"

#include <algorithm>

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
  // Whether its combine reads as an addition (kernels/additive.h): the atomic finishes then apply.
  if (const auto why = not_additive(r)) std::printf("  not additive (%s): no atomic finish\n", why->c_str());
  else if (plain_post(r)) std::printf("  additive: the sum's atomic finishes apply\n");
  else std::printf("  additive: the sum's atomic finishes apply to rows, columns and segments (post-map not `a`)\n");
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

namespace {

std::string point_name(Problem problem, DType d, Shape s) {
  const std::string dt(name(d));
  if (problem == Problem::array) return dt + " n=" + std::to_string(s.length);
  const Shape matrix = problem == Problem::columns ? Shape{s.length, s.count} : s; // ROWSxCOLS
  return dt + " " + std::string(name(problem)) + " " + std::to_string(matrix.count) + "x" +
         std::to_string(matrix.length);
}

} // namespace

void read_check_data(const std::string& dir, bool problem_given, SweepOptions& o) {
  if (!o.user)
    throw Usage("--check-data is for --reduction (a built-in op is checked against the CPU reference)");
  try {
    auto data = std::make_shared<CheckData>(reduce_tune::read_check_data(dir));
    if (problem_given && data->problem != o.problem)
      throw Usage("--check-data " + dir + " holds " + std::string(name(data->problem)) + " points, but --problem is " +
                  std::string(name(o.problem)));
    o.problem = data->problem;
    o.check_data = std::move(data);
  } catch (const CheckDataError& e) {
    throw Usage(std::string("--check-data: ") + e.what());
  }
}

void fit_check_data(const PointsGiven& given, SweepOptions& o) {
  const CheckData& data = *o.check_data;
  const bool array = o.problem == Problem::array;
  if (!given.dtypes) {
    o.dtypes.clear();
    for (const CheckPoint& p : data.points)
      if (std::find(o.dtypes.begin(), o.dtypes.end(), p.dtype) == o.dtypes.end()) o.dtypes.push_back(p.dtype);
  }
  for (DType d : o.dtypes)
    if (auto why = o.user->unsupported(d))
      throw Usage("--check-data " + data.dir + ": " + std::string(name(d)) + " points, but " + o.user->name + ": " + *why);
  if (array ? !given.sizes : !given.shapes) {
    o.sizes.clear(), o.shapes.clear();
    for (const CheckPoint& p : data.points) {
      if (array && std::find(o.sizes.begin(), o.sizes.end(), p.shape.length) == o.sizes.end())
        o.sizes.push_back(p.shape.length);
      if (!array && std::find(o.shapes.begin(), o.shapes.end(), p.shape) == o.shapes.end()) o.shapes.push_back(p.shape);
    }
  }
  std::vector<Shape> shapes = o.shapes;
  if (array)
    for (std::uint64_t n : o.sizes) shapes.push_back(Shape{1, n});
  for (DType d : o.dtypes)
    for (Shape s : shapes)
      if (!data.find(d, s)) {
        std::string have;
        for (const CheckPoint& p : data.points) have += (have.empty() ? "" : ", ") + point_name(p.problem, p.dtype, p.shape);
        throw Usage("--check-data " + data.dir + " has no point " + point_name(o.problem, d, s) + " (its points: " + have +
                    "); give --dtypes and --" + (array ? "sizes" : "shapes") + " among them, or neither");
      }
}

} // namespace reduce_tune::cli
