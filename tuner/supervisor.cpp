// reduce-tune: worker processes, one per GPU, supervised.
#include "tuner/supervisor.h"

#include "kernels/driver.h"
#include "kernels/nvrtc.h"

#include <poll.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <map>
#include <set>
#include <sstream>

extern char** environ;

namespace reduce_tune {
namespace {

using Clock = std::chrono::steady_clock;

// One worker process and what the supervisor knows of it.
struct Worker {
  int ordinal = 0;
  pid_t pid = -1;
  int fd = -1;               // read end of the worker's stdout
  std::string buffer;        // a partial line
  Progress current;          // the point being measured (phase "measure") or idle
  bool busy = false;
  Clock::time_point since;   // when the current point began
  bool killed_for_timeout = false;
  bool finished = false;
};

// Starts `exe worker --device N --run-id R <args>` with its stdout on a pipe.
void spawn(Worker& w, const SupervisorOptions& so, std::int64_t run_id) {
  int fds[2];
  if (pipe(fds) != 0) throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
  std::vector<std::string> args = {so.worker_exe, "worker", "--device", std::to_string(w.ordinal),
                                   "--run-id", std::to_string(run_id)};
  args.insert(args.end(), so.worker_args.begin(), so.worker_args.end());
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, fds[1], STDOUT_FILENO);
  posix_spawn_file_actions_addclose(&fa, fds[0]);
  posix_spawn_file_actions_addclose(&fa, fds[1]);
  const int rc = posix_spawn(&w.pid, so.worker_exe.c_str(), &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  close(fds[1]);
  if (rc != 0) {
    close(fds[0]);
    throw std::runtime_error("cannot start worker " + so.worker_exe + ": " + std::strerror(rc));
  }
  w.fd = fds[0];
  w.buffer.clear();
  w.busy = false;
  w.killed_for_timeout = false;
}

std::string describe_exit(int status, bool timed_out, double timeout_s) {
  if (timed_out) return "timed out after " + std::to_string(int(timeout_s)) + " s (worker killed)";
  if (WIFSIGNALED(status)) return std::string("worker killed by signal ") + strsignal(WTERMSIG(status));
  return "worker exited with code " + std::to_string(WEXITSTATUS(status));
}

} // namespace

std::string progress_line(const Progress& p) {
  std::ostringstream o;
  o << "rt-progress " << p.phase << ' ' << p.done << ' ' << p.total << ' ' << p.elapsed_s << ' '
    << p.eta_s << ' ' << (p.key.empty() ? "-" : p.key) << ' ' << name(p.dtype) << ' ' << name(p.op)
    << ' ' << name(p.problem) << ' ' << p.count << ' ' << p.n << '\n';
  return o.str();
}

bool parse_progress_line(const std::string& line, Progress& p) {
  std::istringstream in(line);
  std::string tag;
  Progress q;
  std::string dtype, op, problem;
  if (!(in >> tag >> q.phase >> q.done >> q.total >> q.elapsed_s >> q.eta_s >> q.key >> dtype >> op >>
        problem >> q.count >> q.n) ||
      tag != "rt-progress")
    return false;
  const auto d = parse_dtype(dtype);
  const auto o = parse_op(op);
  const auto pr = parse_problem(problem);
  if (!d || !o || !pr) return false;
  q.dtype = *d, q.op = *o, q.problem = *pr;
  if (q.key == "-") q.key.clear();
  p = q;
  return true;
}

std::vector<DeviceOutcome> supervise(const SweepOptions& o, const SupervisorOptions& so,
                                     const DeviceProgress& progress, const std::function<bool()>& stop) {
  db::Store store(o.db_path.empty() ? db::default_store_path() : o.db_path);
  Nvrtc nvrtc(o.nvrtc_path);
  std::vector<DeviceOutcome> out;
  std::set<int> compiled_ccs;
  for (int ordinal : so.devices) {
    DeviceOutcome d;
    d.ordinal = ordinal;
    d.device = device_record(ordinal);
    store.upsert_device(d.device);
    const cuda::DeviceInfo info = cuda::device_info(ordinal);
    // One compile per architecture, before any worker starts: the workers find it all cached.
    // A lazy sweep (a time-limited search) compiles only what it measures, in the worker.
    if (!o.lazy_compile && compiled_ccs.insert(info.cc()).second)
      precompile(o, info.cc(), info.max_threads_per_block, info.sm_count,
                 [&](const Progress& p) { if (progress) progress(ordinal, p); });
    out.push_back(d);
  }
  for (DeviceOutcome& d : out) d.run_id = store.begin_run(run_record(o, d.device.uuid, nvrtc.version()));

  const auto t0 = Clock::now();
  std::vector<Worker> workers(out.size());
  for (std::size_t i = 0; i < out.size(); ++i) {
    workers[i].ordinal = out[i].ordinal;
    spawn(workers[i], so, out[i].run_id);
  }

  std::size_t running = workers.size();
  while (running > 0) {
    std::vector<pollfd> fds;
    std::vector<std::size_t> which;
    for (std::size_t i = 0; i < workers.size(); ++i)
      if (!workers[i].finished && workers[i].fd >= 0) {
        fds.push_back({workers[i].fd, POLLIN, 0});
        which.push_back(i);
      }
    poll(fds.data(), fds.size(), 200);
    for (std::size_t k = 0; k < fds.size(); ++k) {
      Worker& w = workers[which[k]];
      DeviceOutcome& d = out[which[k]];
      if (fds[k].revents & POLLIN) {
        char buf[4096];
        const ssize_t got = read(w.fd, buf, sizeof buf);
        if (got > 0) {
          w.buffer.append(buf, std::size_t(got));
          for (std::size_t nl; (nl = w.buffer.find('\n')) != std::string::npos;) {
            Progress p;
            if (parse_progress_line(w.buffer.substr(0, nl), p)) {
              w.current = p;
              w.busy = p.phase == "measure";
              w.since = Clock::now();
              d.done = p.done, d.total = p.total;
              if (progress) progress(w.ordinal, p);
            }
            w.buffer.erase(0, nl + 1);
          }
          continue;
        }
      }
      if (fds[k].revents & (POLLHUP | POLLERR | POLLIN)) {
        // End of output: the worker exited (or is about to).
        int status = 0;
        waitpid(w.pid, &status, 0);
        close(w.fd);
        w.fd = -1;
        const int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
        auto finish = [&](const char* st) {
          d.status = st;
          d.wall_s = std::chrono::duration<double>(Clock::now() - t0).count();
          w.finished = true;
          --running;
        };
        if (!w.killed_for_timeout && (code == 0 || code == 130)) {
          finish(code == 0 ? "done" : "interrupted");
          continue;
        }
        const std::string why = describe_exit(status, w.killed_for_timeout, so.timeout_s);
        // Code 3: the worker hit a CUDA fault and recorded it. Otherwise, if it died on a point,
        // that point is recorded as failed here.
        const bool on_point = w.busy || code == kWorkerCudaFault;
        if (on_point) {
          const auto& c = w.current;
          const auto held = store.measured_keys(d.device.uuid, c.dtype, c.op, c.problem, Shape{c.count, c.n},
                                                d.run_id);
          if (std::find(held.begin(), held.end(), c.key) == held.end()) {
            db::Measurement m;
            m.key = c.key;
            if (auto cfg = parse_key(c.key)) {
              m.variant = cfg->variant, m.block = cfg->block, m.unroll = cfg->unroll;
              m.vec = cfg->vec, m.grid = cfg->grid;
              m.tail = name(cfg->tail), m.finish = name(cfg->finish);
            }
            m.dtype = c.dtype, m.op = c.op, m.problem = c.problem, m.count = c.count, m.n = c.n;
            m.valid = false;
            m.error = why;
            m.cold = !o.hot;
            store.add_measurements(d.run_id, {m});
          }
          d.incidents.push_back(c.key + " " + point_text(c) + ": " + why);
        } else {
          d.incidents.push_back("not on a point: " + why);
        }
        if (stop && stop()) {
          finish("interrupted");
        } else if (!on_point || ++d.restarts > so.max_restarts) {
          // Off a point a restart would fail the same way (no GPU, a bad option, ...).
          finish("failed");
        } else {
          spawn(w, so, d.run_id);
        }
      }
    }
    // Time-outs: a point running too long is a hang.
    for (Worker& w : workers)
      if (!w.finished && w.busy && !w.killed_for_timeout &&
          std::chrono::duration<double>(Clock::now() - w.since).count() > so.timeout_s) {
        w.killed_for_timeout = true;
        kill(w.pid, SIGKILL);
      }
  }
  for (DeviceOutcome& d : out) store.end_run(d.run_id, d.status);
  return out;
}

} // namespace reduce_tune
