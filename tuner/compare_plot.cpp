// reduce-tune: the comparison's plots: GB/s against size per GPU beside the material's published
// staircase, drawn by gnuplot (tuner/compare.h declares them).
#include "tuner/compare.h"

#include "tuner/sizes.h"

#include <unistd.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <stdexcept>

extern char** environ;

namespace reduce_tune {
namespace {
namespace fs = std::filesystem;
} // namespace

std::vector<BandwidthCurve> bandwidth_curves(const std::vector<GpuData>& gpus, DType dtype, Op op) {
  std::vector<BandwidthCurve> out;
  for (const GpuData& g : gpus) {
    std::map<std::uint64_t, const db::Measurement*> best;
    for (const db::Measurement& m : g.measurements)
      if (m.valid && m.problem == Problem::array && m.dtype == dtype && m.op == op && !std::isnan(m.gbps)) {
        const db::Measurement*& b = best[m.n];
        if (!b || m.median_us < b->median_us) b = &m;
      }
    if (best.empty()) continue;
    BandwidthCurve c;
    c.label = g.device.name;
    if (std::count_if(gpus.begin(), gpus.end(), [&](const GpuData& h) { return h.device.name == g.device.name; }) > 1)
      c.label += " (" + g.device.uuid.substr(0, std::min<std::size_t>(g.device.uuid.size(), 12)) + ")";
    for (const auto& [n, m] : best) c.points.emplace_back(n, m->gbps);
    out.push_back(std::move(c));
  }
  return out;
}

namespace {

/// gnuplot string literal (single quotes; a quote doubled).
std::string gp_string(const std::string& s) {
  std::string r = "'";
  for (const char c : s) r += c == '\'' ? std::string("''") : std::string(1, c);
  return r + "'";
}

/// Runs `argv` (stdout discarded, stderr to `log`) and waits; returns its exit status (127 when
/// it could not be started). posix_spawn, not fork: a forked child would flush a copy of this
/// process's buffered stdout (the table being printed) before exec.
int run_program(const std::vector<std::string>& argv, const fs::path& log) {
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&fa, STDERR_FILENO, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  const int rc = posix_spawnp(&pid, args[0], &fa, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) return 127;
  int status = 0;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) throw std::runtime_error("waitpid failed");
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

struct TempDir {
  fs::path path;
  TempDir() {
    std::random_device rd;
    path = fs::temp_directory_path() / ("reduce-tune-plot-" + std::to_string(getpid()) + "-" + std::to_string(rd()));
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

} // namespace

void plot_compare(const CompareTable& t, const std::vector<BandwidthCurve>& curves, const std::string& path,
                  const std::string& gnuplot) {
  const std::string ext = fs::path(path).extension().string();
  std::string terminal;
  if (ext == ".png") terminal = "pngcairo size 1600,700 font 'Sans,10'";
  else if (ext == ".svg") terminal = "svg size 1600,700 dynamic font 'Sans,10'";
  else throw std::invalid_argument("plot file '" + path + "' must end in .png or .svg");
  TempDir dir;
  std::ofstream gp(dir.path / "plot.gp");
  gp << "set terminal " << terminal << "\nset output " << gp_string(fs::absolute(path).string()) << "\n"
     << "set encoding utf8\nset termoption noenhanced\nset key outside bottom center vertical noautotitle\n"
     << "set grid\nset multiplot layout 1,2 title "
     << gp_string("reduce-tune: " + std::string(name(t.dtype)) + " " + std::string(name(t.op)) + " (best configuration per size; the kernels of " + t.doc + ")")
     << "\n";
  // Left: GB/s against size, one curve per GPU.
  gp << "set title 'Bandwidth against size'\nset logscale x 2\nset format x '2^%L'\n"
     << "set xlabel 'elements'\nset ylabel 'GB/s (best configuration)'\nset yrange [0:*]\n";
  if (curves.empty()) {
    gp << "set label 1 'no measurements' at graph 0.4, 0.5\nplot [1024:2**28] 0 notitle lc rgb 'white'\nunset label 1\n";
  } else {
    gp << "plot ";
    for (std::size_t i = 0; i < curves.size(); ++i) {
      const fs::path data = dir.path / ("bw" + std::to_string(i) + ".dat");
      std::ofstream d(data);
      for (const auto& [n, gbps] : curves[i].points) d << n << ' ' << gbps << '\n';
      gp << (i ? ", " : "") << gp_string(data.string()) << " using 1:2 with linespoints lw 2 pt 7 title "
         << gp_string(curves[i].label);
    }
    gp << "\n";
  }
  // Right: the staircase, time per kernel of the document, one line per column.
  gp << "unset logscale x\nset format x '%g'\nset title " << gp_string("The material's staircase (" + t.doc + ")")
     << "\nset logscale y 10\nset yrange [*:*]\nset xlabel ''\nset ylabel 'time (ms)'\n"
     << "set xtics rotate by -40 left font ',8'\nset xrange [-0.5:"
     << double(std::count_if(t.rows.begin(), t.rows.end(), [](const CompareRow& r) { return r.order > 0; })) - 0.5
     << "]\n"
     << "set bmargin 12\n";
  bool any = false;
  std::ostringstream plots;
  for (std::size_t c = 0; c < t.columns.size(); ++c) {
    const fs::path data = dir.path / ("steps" + std::to_string(c) + ".dat");
    std::ofstream d(data);
    std::size_t points = 0;
    for (std::size_t r = 0; r < t.rows.size(); ++r) {
      const CompareCell& x = t.cells[r][c];
      if (x.present && x.ms > 0 && t.rows[r].order > 0) d << r << ' ' << x.ms << '\n', ++points;
    }
    if (!points) continue;
    plots << (any ? ", " : "") << gp_string(data.string()) << " using 1:2 with linespoints lw 2 "
          << (t.columns[c].published ? "dt 2 pt 6" : "dt 1 pt 7") << " title " << gp_string(t.columns[c].label);
    any = true;
  }
  gp << "set xtics (";
  for (std::size_t r = 0; r < t.rows.size(); ++r)
    if (t.rows[r].order > 0) gp << (r ? ", " : "") << gp_string(t.rows[r].kernel) << " " << r;
  gp << ")\n";
  if (any) gp << "plot " << plots.str() << "\n";
  else gp << "set label 2 'no figures' at graph 0.4, 0.5\nunset logscale y\nplot 0 notitle lc rgb 'white'\n";
  gp << "unset multiplot\nset output\n";
  gp.close();
  const int status = run_program({gnuplot, (dir.path / "plot.gp").string()}, dir.path / "gnuplot.log");
  if (status != 0) {
    std::ifstream in(dir.path / "gnuplot.log");
    std::string log((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    throw std::runtime_error(status == 127 ? "cannot run '" + gnuplot + "' (install gnuplot: apt-get install gnuplot-nox)"
                                           : "gnuplot failed (exit " + std::to_string(status) + "):\n" + log);
  }
  std::error_code ec;
  if (!fs::exists(path, ec) || fs::file_size(path, ec) == 0)
    throw std::runtime_error("gnuplot wrote no " + path);
}

} // namespace reduce_tune
