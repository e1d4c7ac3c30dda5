// reduce-tune tune --recorded: the recorded call points as sweeps (tuner/recorded.h).
#include "tuner/recorded.h"

#include "kernels/driver.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <stdexcept>

#include <algorithm>
#include <map>
#include <tuple>

namespace reduce_tune {
namespace {

/// A user reduction's description in a private temporary file, for `tune --reduction FILE`;
/// removed with the object.
struct DescriptionFile {
  std::string path;
  explicit DescriptionFile(const std::string& text) {
    std::string name = (std::filesystem::temp_directory_path() / "reduce-tune-reduction-XXXXXX").string();
    const int fd = mkstemp(name.data()); // mode 0600
    if (fd < 0) throw std::runtime_error("cannot make a temporary file for a reduction: " + std::string(std::strerror(errno)));
    const bool ok = write(fd, text.data(), text.size()) == ssize_t(text.size());
    close(fd);
    path = name;
    if (!ok) {
      std::remove(path.c_str());
      throw std::runtime_error("cannot write the temporary file " + path);
    }
  }
  ~DescriptionFile() { std::remove(path.c_str()); }
  DescriptionFile(const DescriptionFile&) = delete;
  DescriptionFile& operator=(const DescriptionFile&) = delete;
};

} // namespace

std::vector<std::string> RecordedSweep::args() const {
  std::string list;
  for (const Shape& s : shapes) {
    std::string one;
    if (problem == Problem::array) one = std::to_string(s.length);
    else if (problem == Problem::columns) one = std::to_string(s.length) + "x" + std::to_string(s.count); // rows x cols
    else one = std::to_string(s.count) + "x" + std::to_string(s.length);
    list += (list.empty() ? "" : ",") + one;
  }
  std::vector<std::string> out = {"--problem", std::string(name(problem)), "--dtypes", std::string(name(dtype))};
  if (!user) out.insert(out.end(), {"--ops", std::string(name(op))});
  out.insert(out.end(), {problem == Problem::array ? "--sizes" : "--shapes", list});
  return out;
}

std::vector<RecordedSweep> recorded_sweeps(const std::vector<db::RecordedPoint>& points, const std::string& uuid,
                                           const std::string& model, std::vector<db::RecordedPoint>* unsweepable) {
  std::map<std::tuple<Problem, DType, db::OpKey>, std::vector<Shape>> groups;
  for (const db::RecordedPoint& p : points) {
    if (p.device_uuid != uuid && p.device_name != model) continue;
    if (p.shape.length == 0) {
      if (unsweepable) unsweepable->push_back(p);
      continue;
    }
    auto& shapes = groups[{p.problem, p.dtype, p.op_key()}];
    const Shape s = p.problem == Problem::array ? Shape{1, p.shape.length} : p.shape;
    if (std::find(shapes.begin(), shapes.end(), s) == shapes.end()) shapes.push_back(s);
  }
  std::vector<RecordedSweep> out;
  for (auto& [k, shapes] : groups) {
    const auto [problem, dtype, op] = k;
    std::sort(shapes.begin(), shapes.end(), [](Shape a, Shape b) {
      return std::tuple(a.elements(), a.length) < std::tuple(b.elements(), b.length);
    });
    out.push_back({problem, dtype, op.builtin().value_or(Op::sum), op.hash(), shapes});
  }
  return out;
}

int tune_recorded(const std::vector<std::string>& args, const std::vector<int>& devices, const std::string& db_path,
                  bool search_given, const std::function<int(const std::vector<std::string>&)>& tune) {
  const std::string path = db_path.empty() ? db::default_store_path() : db_path;
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    std::fprintf(stderr, "reduce-tune: no store at %s: nothing recorded to tune\n", path.c_str());
    return 0;
  }
  // The command's own options, less those this sets.
  std::vector<std::string> common;
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--recorded" || args[i].starts_with("--device=")) continue;
    if (args[i] == "--device") {
      ++i;
      continue;
    }
    common.push_back(args[i]);
  }
  if (!search_given) common.insert(common.end(), {"--search", "guided"});
  int worst = 0;
  for (int d : devices) {
    const cuda::DeviceInfo info = cuda::device_info(d);
    std::vector<db::RecordedPoint> points;
    {
      const db::Store store(path);
      // Points tuned since they were recorded are done.
      for (db::RecordedPoint& p : store.recorded())
        if (!store.best(info.uuid, p.dtype, p.op_key(), p.problem,
                        p.problem == Problem::array ? Shape{1, p.shape.length} : p.shape))
          points.push_back(std::move(p));
    }
    std::vector<db::RecordedPoint> unsweepable;
    const std::vector<RecordedSweep> sweeps = recorded_sweeps(points, info.uuid, info.name, &unsweepable);
    for (const db::RecordedPoint& p : unsweepable)
      std::fprintf(stderr, "reduce-tune: GPU %d: %s %s segments x %llu recorded without their lengths: "
                   "tune it with --problem segments --shapes SEGMENTSxMEAN\n", d,
                   std::string(name(p.dtype)).c_str(), p.op_key().name().c_str(),
                   (unsigned long long)p.shape.count);
    if (sweeps.empty()) {
      std::fprintf(stderr, "reduce-tune: GPU %d (%s): no recorded point left to tune\n", d, info.name.c_str());
      continue;
    }
    for (const RecordedSweep& s : sweeps) {
      std::vector<std::string> a = common;
      a.insert(a.end(), {"--device", std::to_string(d)});
      std::vector<std::string> selection = s.args();
      std::optional<DescriptionFile> file;
      if (s.user) {
        // The description the program's calls stored beside their points.
        const std::optional<db::ReductionRecord> kept = db::Store(path).reduction(*s.user);
        const std::string who = db::OpKey::user(*s.user).name();
        if (!kept) {
          std::fprintf(stderr, "reduce-tune: GPU %d: %s: the store keeps no description of it: skipped\n", d,
                       who.c_str());
          worst = std::max(worst, 1);
          continue;
        }
        file.emplace(kept->text);
        selection.insert(selection.end(), {"--reduction", file->path});
      }
      a.insert(a.end(), selection.begin(), selection.end());
      std::string shown;
      for (const auto& x : selection) shown += " " + x;
      std::fprintf(stderr, "reduce-tune: GPU %d: the recorded points:%s\n", d, shown.c_str());
      worst = std::max(worst, tune(a));
    }
  }
  return worst;
}

} // namespace reduce_tune
