// reduce-tune: tuning on first use, the library's side (runtime/autotune.h): finding, starting and
// talking to the process's tuning worker, and cleaning up after it where it dies.
//
// The worker is `reduce-tune autotune-worker`, started with posix_spawn (never fork: the caller's
// process has CUDA initialized) on a socket pair that is its stdin and stdout (a socket, so that a
// write to a worker that died raises no SIGPIPE in the caller: MSG_NOSIGNAL). Lines, tab-separated:
//   worker:  rt-autotune <protocol> ready
//   library: tune <uuid> <dtype> <op> <problem> <count> <length> <host|device|wide>
//            <deterministic 0|1> <in-place 0|1> <budget ms> <store path> <nvrtc path> <reduction>
// <op> is the store's name of the op: a built-in op's ("sum"), or a user reduction's
// ("user:<hash>"), whose description is then <reduction>: to_text's lines (which hold tabs,
// newlines and `<<TAG` blocks) as lower-case hex, two digits a byte, so that any text fits one
// field of one line; the worker parses it and refuses it unless it has that hash. Empty for a
// built-in op.
//   worker:  run <id> <owner>            a run began; it holds the point's claim as <owner>
//            measure <key>               before each measurement
//            done <status> <ms> <measured> <note>
// Where the worker dies or hangs on a point (killed after a measurement takes longer than the
// time-out), the library records the configuration it was measuring as failed in that run (the
// worker records a CUDA fault itself before it exits), ends the run, drops the worker's claim, and
// asks a new worker once more: it resumes the point, skipping what the store holds.
#include "runtime/autotune.h"

#include "db/claims.h"
#include "db/op_key.h"
#include "db/store.h"
#include "reduce_tune/config.h"
#include "kernels/trust.h"
#include "kernels/user_op.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <sstream>
#include <vector>

extern char** environ;

#ifndef RT_INSTALL_BINDIR
#define RT_INSTALL_BINDIR ""
#endif
#ifndef RT_BUILD_BINDIR
#define RT_BUILD_BINDIR ""
#endif

namespace reduce_tune::detail {
namespace {

using Clock = std::chrono::steady_clock;
namespace fs = std::filesystem;

bool env_on(const char* name) {
  const char* v = std::getenv(name);
  if (!v) return false;
  const std::string_view s = v;
  return s == "1" || s == "true" || s == "yes" || s == "on";
}

/// A positive number from the environment, else `fallback`.
double env_seconds(const char* name, double fallback) {
  if (const char* v = std::getenv(name)) {
    char* end = nullptr;
    const double x = std::strtod(v, &end);
    if (end != v && *end == '\0' && x > 0) return x;
  }
  return fallback;
}

/// The file the library's code was loaded from: the shared library, the Python extension, or
/// the program it is linked into statically.
fs::path loaded_from() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<const void*>(&find_worker), &info) && info.dli_fname && *info.dli_fname) {
    std::error_code ec;
    fs::path p = fs::canonical(info.dli_fname, ec);
    if (!ec) return p;
  }
  std::error_code ec;
  return fs::read_symlink("/proc/self/exe", ec);
}

std::optional<std::string> usable_worker(const fs::path& p) {
  std::error_code ec;
  if (!fs::is_regular_file(p, ec)) return "no " + p.string();
  if (access(p.c_str(), X_OK) != 0) return p.string() + " is not executable";
  // A program others may replace would run with the caller's rights: refused as a store would be.
  if (auto why = untrusted_store(p)) return p.string() + ": " + *why;
  return std::nullopt;
}


/// Bytes as lower-case hex, two digits each: a user reduction's description in one field.
std::string to_hex(const std::string& bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (const unsigned char c : bytes) out += kDigits[c >> 4], out += kDigits[c & 15];
  return out;
}

/// to_hex's bytes back, or nullopt for an odd length or a character that is not a hex digit.
std::optional<std::string> from_hex(const std::string& hex) {
  if (hex.size() % 2) return std::nullopt;
  auto digit = [](char c) {
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
  };
  std::string out;
  out.reserve(hex.size() / 2);
  for (std::size_t i = 0; i < hex.size(); i += 2) {
    const int hi = digit(hex[i]), lo = digit(hex[i + 1]);
    if (hi < 0 || lo < 0) return std::nullopt;
    out += char(hi * 16 + lo);
  }
  return out;
}

std::string describe_exit(int status) {
  if (WIFSIGNALED(status)) return std::string("killed by signal ") + strsignal(WTERMSIG(status));
  if (WIFEXITED(status)) return "exited with code " + std::to_string(WEXITSTATUS(status));
  return "ended";
}

/// The process's worker. One request at a time (mu).
class Worker {
public:
  TuneOutcome tune(const TuneRequest& r) {
    std::lock_guard lock(mu_);
    const auto t0 = Clock::now();
    TuneOutcome out = attempt(r);
    // A worker that died on the point (a kernel faulted or hung) is replaced, and the point
    // resumed once: the new worker skips what the store holds, the failed configuration too.
    if (out.status == TuneOutcome::Status::failed && died_on_point_) {
      TuneOutcome again = attempt(r);
      again.measured += out.measured;
      if (again.status != TuneOutcome::Status::tuned) again.note = out.note + "; then " + again.note;
      out = again;
    }
    out.ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
    return out;
  }

  /// Ends the worker and forgets why it was off: the next request starts afresh.
  void stop() {
    std::lock_guard lock(mu_);
    if (pid_ > 0 && spawner_ == getpid()) reap(true);
    pid_ = -1, fd_ = -1;
    disabled_.clear();
    deaths_ = 0;
  }

private:
  static constexpr int kMaxDeaths = 4;          // per process: then first-use tuning stops
  static constexpr double kStartTimeoutS = 30;  // the worker's first line

  TuneOutcome attempt(const TuneRequest& r) {
    const auto t_call = Clock::now();
    died_on_point_ = false;
    TuneOutcome out;
    if (!disabled_.empty()) return {TuneOutcome::Status::unavailable, disabled_};
    if (!running() && !start(out.note)) {
      out.status = TuneOutcome::Status::unavailable;
      return out;
    }
    if (r.store_path.find_first_of("\t\n") != std::string::npos ||
        r.nvrtc_path.find_first_of("\t\n") != std::string::npos)
      return {TuneOutcome::Status::unavailable, "a path with a tab or newline"};
    // The budget is the call's: what starting the worker took (its process, its handshake) is
    // spent, and the worker's search gets the rest (at least its floor of measurements).
    const double spent_ms = std::chrono::duration<double, std::milli>(Clock::now() - t_call).count();
    const double budget_ms = std::max(1.0, r.budget_ms - spent_ms);
    TuneRequest sent = r;
    sent.budget_ms = budget_ms;
    const std::string text = request_line(sent);
    if (send(fd_, text.data(), text.size(), MSG_NOSIGNAL) != ssize_t(text.size())) {
      const std::string why = "the tuning worker is gone (" + reap(false) + ")";
      return {TuneOutcome::Status::failed, why};
    }
    const double per_measurement_s = env_seconds("REDUCE_TUNE_AUTOTUNE_TIMEOUT_S", 20);
    std::int64_t run_id = 0;
    std::string owner, measuring;
    for (;;) {
      std::string reply;
      const Read got = read_line(reply, per_measurement_s);
      if (got != Read::line) {
        // Dead, or hung on a kernel: kill it, then clean up after it as the supervisor would.
        const bool hung = got == Read::timeout;
        const std::string how = hung ? "timed out after " + std::to_string(int(per_measurement_s)) +
                                           " s without a reply (killed)"
                                     : "";
        const std::string exit = reap(true);
        const std::string why = "the tuning worker " + (hung ? how : exit) +
                                (measuring.empty() ? "" : " measuring " + measuring);
        died_on_point_ = !measuring.empty();
        clean_up(r, run_id, owner, measuring, why);
        if (++deaths_ >= kMaxDeaths) disabled_ = "first-use tuning stopped after " + std::to_string(deaths_) +
                                                 " worker deaths in this process; the last: " + why;
        return {TuneOutcome::Status::failed, why, 0, out.measured};
      }
      const std::vector<std::string> f = split_tabs(reply);
      if (f[0] == "run" && f.size() >= 3) {
        run_id = std::atoll(f[1].c_str());
        owner = f[2];
      } else if (f[0] == "measure" && f.size() >= 2) {
        measuring = f[1];
        ++out.measured;
      } else if (f[0] == "done" && f.size() >= 4) {
        const std::string& st = f[1];
        out.status = st == "tuned"             ? TuneOutcome::Status::tuned
                     : st == "tuned_elsewhere" ? TuneOutcome::Status::tuned_elsewhere
                     : st == "busy"            ? TuneOutcome::Status::busy
                                               : TuneOutcome::Status::failed;
        out.note = f.size() >= 5 ? f[4] : "";
        if (f[1] == "fault") {
          // A CUDA fault, recorded by the worker, which exits (its context is lost).
          reap(true);
          died_on_point_ = true;
          ++deaths_;
        }
        return out;
      }
    }
  }

  bool running() {
    if (pid_ <= 0) return false;
    if (spawner_ != getpid()) { // a fork of the process that started it: not ours to talk to
      close(fd_);               // this copy only: the worker still ends when its program does
      pid_ = -1, fd_ = -1;
      return false;
    }
    if (!alive()) {
      reap(false);
      return false;
    }
    return true;
  }

  bool alive() {
    if (pid_ <= 0) return false;
    int status = 0;
    const pid_t w = waitpid(pid_, &status, WNOHANG);
    if (w == 0) return true;
    if (w == pid_) last_status_ = status, reaped_ = true;
    if (w < 0 && errno == ECHILD) return kill(pid_, 0) == 0; // SIGCHLD ignored: reaped by the system
    return false;
  }

  /// Ends the worker (killed where `kill_it`), closes the socket; what became of it.
  std::string reap(bool kill_it) {
    std::string what = "ended";
    if (pid_ > 0) {
      if (kill_it && !reaped_) kill(pid_, SIGKILL);
      int status = last_status_;
      if (!reaped_ && waitpid(pid_, &status, 0) == pid_) reaped_ = true;
      what = reaped_ ? describe_exit(status) : "ended";
    }
    if (fd_ >= 0) close(fd_);
    fd_ = -1, pid_ = -1, buffer_.clear(), reaped_ = false, last_status_ = 0;
    return what;
  }

  bool start(std::string& why) {
    std::string not_found;
    const std::optional<std::string> exe = find_worker(&not_found);
    if (!exe) {
      // Nothing to start, now or later in this process.
      disabled_ = why = "no tuning worker: " + not_found;
      return false;
    }
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
      why = std::string("socketpair: ") + std::strerror(errno);
      return false;
    }
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, sv[1], STDIN_FILENO);
    posix_spawn_file_actions_adddup2(&fa, sv[1], STDOUT_FILENO);
    posix_spawn_file_actions_addopen(&fa, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
    // Its own process group: a terminal's Ctrl-C is the program's, not a reason to record the
    // configuration being measured as failed.
    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
    posix_spawnattr_setpgroup(&attr, 0);
    std::string exe_s = *exe, cmd = "autotune-worker";
    char* argv[] = {exe_s.data(), cmd.data(), nullptr};
    pid_t pid = -1;
    const int rc = posix_spawn(&pid, exe_s.c_str(), &fa, &attr, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&attr);
    close(sv[1]);
    if (rc != 0) {
      close(sv[0]);
      why = "cannot start " + exe_s + ": " + std::strerror(rc);
      if (++deaths_ >= kMaxDeaths) disabled_ = why;
      return false;
    }
    pid_ = pid, fd_ = sv[0], spawner_ = getpid(), reaped_ = false;
    std::string hello;
    const std::string want = "rt-autotune\t" + std::to_string(kAutotuneProtocol) + "\tready";
    if (read_line(hello, kStartTimeoutS) != Read::line || hello != want) {
      const std::string got = hello.empty() ? "no greeting (" + reap(true) + ")" : "'" + hello + "'";
      reap(true);
      // Another version's reduce-tune, or not one at all: it will not change in this process.
      disabled_ = why = exe_s + " is not this library's tuning worker: " + got;
      return false;
    }
    return true;
  }

  enum class Read { line, timeout, closed };
  /// Reads one line within `timeout_s`: a line, none in time, or the worker closed its end.
  Read read_line(std::string& line, double timeout_s) {
    const auto until = Clock::now() + std::chrono::duration<double>(timeout_s);
    for (;;) {
      if (const std::size_t nl = buffer_.find('\n'); nl != std::string::npos) {
        line = buffer_.substr(0, nl);
        buffer_.erase(0, nl + 1);
        return Read::line;
      }
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - Clock::now()).count();
      if (left <= 0) return Read::timeout;
      pollfd p{fd_, POLLIN, 0};
      const int n = poll(&p, 1, int(std::min<long long>(left, 1000)));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) continue;
      char buf[4096];
      const ssize_t got = recv(fd_, buf, sizeof buf, 0);
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0) return Read::closed; // the worker closed its end: it exited
      buffer_.append(buf, std::size_t(got));
    }
  }

  /// After a worker died on a point: the configuration it was measuring recorded as failed
  /// (unless it recorded that itself), its run ended, its claim dropped.
  void clean_up(const TuneRequest& r, std::int64_t run_id, const std::string& owner, const std::string& key,
                const std::string& why) {
    try {
      db::Store store(r.store_path);
      if (run_id > 0 && !key.empty()) {
        const auto held = store.measured_keys(r.device_uuid, r.dtype, r.op_key(), r.problem, r.shape, run_id);
        if (std::find(held.begin(), held.end(), key) == held.end()) {
          db::Measurement m;
          m.key = key;
          if (auto c = parse_key(key)) {
            m.variant = c->variant, m.block = c->block, m.unroll = c->unroll, m.vec = c->vec, m.grid = c->grid;
            m.tail = name(c->tail), m.finish = name(c->finish);
          }
          m.dtype = r.dtype, m.op = r.op, m.problem = r.problem, m.count = r.shape.count, m.n = r.shape.length;
          if (r.user) m.user = r.user->hash;
          m.valid = false;
          m.error = why;
          store.add_measurements(run_id, {m});
        }
      }
      if (run_id > 0) store.end_run(run_id, "failed");
      if (!owner.empty()) store.release_claims(owner);
    } catch (const std::exception&) {
      // The store went away: the claim lapses by itself (its owner is gone).
    }
  }

  std::mutex mu_;
  pid_t pid_ = -1, spawner_ = -1;
  int fd_ = -1;
  std::string buffer_;
  bool reaped_ = false;
  int last_status_ = 0;
  int deaths_ = 0;
  bool died_on_point_ = false;
  std::string disabled_; ///< why first-use tuning is off for the rest of the process
};

Worker& worker() {
  static Worker* w = new Worker; // never destroyed: the worker exits when the socket closes
  return *w;
}

} // namespace

FirstUse first_use(bool autotune, Match match, EntryUse use, Problem problem, Shape at) {
  if (!autotune || match == Match::exact) return FirstUse::as_is;
  if (use != EntryUse::call) return FirstUse::provisional;
  // Offsets whose lengths are on the device have no shape to search at.
  if (problem == Problem::segments && at.length == 0) return FirstUse::as_is;
  return FirstUse::tune;
}

bool autotune_from_env() { return env_on("REDUCE_TUNE_AUTOTUNE"); }

double autotune_budget_ms(double option) {
  const double env = env_seconds("REDUCE_TUNE_AUTOTUNE_MS", 0);
  if (env > 0) return env;
  return option > 0 ? option : 300;
}

std::optional<std::string> find_worker(std::string* why) {
  std::string reasons;
  auto fail = [&](const std::string& r) -> std::optional<std::string> {
    if (why) *why = r;
    return std::nullopt;
  };
  if (const char* e = std::getenv("REDUCE_TUNE_WORKER")) {
    if (!*e) return fail("$REDUCE_TUNE_WORKER is empty (first-use tuning off)");
    if (auto bad = usable_worker(e)) return fail("$REDUCE_TUNE_WORKER: " + *bad);
    return std::string(e);
  }
  std::vector<fs::path> places;
  const fs::path self = loaded_from();
  if (!self.empty()) {
    const fs::path dir = self.parent_path();
    places = {dir / "reduce-tune", dir / "bin" / "reduce-tune", dir.parent_path() / "bin" / "reduce-tune"};
  }
  if (*RT_INSTALL_BINDIR) places.push_back(fs::path(RT_INSTALL_BINDIR) / "reduce-tune");
  if (*RT_BUILD_BINDIR) places.push_back(fs::path(RT_BUILD_BINDIR) / "reduce-tune");
  for (const fs::path& p : places) {
    const auto bad = usable_worker(p);
    if (!bad) return p.string();
    reasons += (reasons.empty() ? "" : "; ") + *bad;
  }
  return fail(reasons.empty() ? "nowhere to look" : reasons);
}

std::string_view name(TuneOutcome::Status s) {
  switch (s) {
  case TuneOutcome::Status::tuned: return "tuned";
  case TuneOutcome::Status::tuned_elsewhere: return "tuned_elsewhere";
  case TuneOutcome::Status::busy: return "busy";
  case TuneOutcome::Status::failed: return "failed";
  case TuneOutcome::Status::unavailable: return "unavailable";
  }
  return "?";
}

std::vector<std::string> split_tabs(const std::string& line) {
  std::vector<std::string> out;
  std::size_t from = 0;
  for (;;) {
    const std::size_t tab = line.find('\t', from);
    out.push_back(line.substr(from, tab == std::string::npos ? std::string::npos : tab - from));
    if (tab == std::string::npos) return out;
    from = tab + 1;
  }
}

db::OpKey TuneRequest::op_key() const { return user ? db::OpKey::user(user->hash) : db::OpKey(op); }

std::string request_line(const TuneRequest& r) {
  std::ostringstream line;
  line.precision(6);
  line << std::fixed << "tune\t" << r.device_uuid << '\t' << name(r.dtype) << '\t' << r.op_key().name() << '\t'
       << name(r.problem) << '\t' << r.shape.count << '\t' << r.shape.length << '\t'
       << (r.wide_result ? "wide" : r.device_result ? "device" : "host") << '\t' << int(r.deterministic) << '\t'
       << int(r.allow_in_place) << '\t' << r.budget_ms << '\t' << r.store_path << '\t' << r.nvrtc_path << '\t'
       << (r.user ? to_hex(to_text(r.user->description)) : "") << '\n';
  return line.str();
}

std::optional<TuneRequest> parse_request_line(const std::string& line, std::string* why) {
  auto fail = [&](const std::string& w) -> std::optional<TuneRequest> {
    if (why) *why = w;
    return std::nullopt;
  };
  const std::vector<std::string> f = split_tabs(line);
  if (f.size() != 14 || f[0] != "tune") return fail("not a tune request of 14 fields");
  TuneRequest r;
  r.device_uuid = f[1];
  const auto dtype = parse_dtype(f[2]);
  const auto op = db::parse_op_key(f[3]);
  const auto problem = parse_problem(f[4]);
  if (!dtype || !op || !problem) return fail("unknown dtype, op or problem");
  r.dtype = *dtype, r.op = op->builtin().value_or(Op::sum), r.problem = *problem;
  if (op->is_user()) {
    const std::optional<std::string> text = from_hex(f[13]);
    if (!text || text->empty()) return fail("the reduction " + f[3] + " with no description in hex");
    try {
      r.user = make_user_op(parse_reduction(*text));
    } catch (const std::exception& e) { // ReductionError, naming the line or the field
      return fail("the reduction " + f[3] + ": " + e.what());
    }
    if (r.user->hash != *op->hash())
      return fail("a description of " + r.user->name + " sent as " + f[3]);
    if (auto no = r.user->unsupported(r.dtype)) return fail("the reduction " + f[3] + ": " + *no);
  } else if (!f[13].empty()) {
    return fail("a description for the built-in op " + f[3]);
  }
  try {
    std::size_t a = 0, b = 0, c = 0;
    r.shape.count = std::stoull(f[5], &a);
    r.shape.length = std::stoull(f[6], &b);
    r.budget_ms = std::stod(f[10], &c);
    if (a != f[5].size() || b != f[6].size() || c != f[10].size()) return fail("a number with trailing text");
  } catch (const std::exception&) {
    return fail("a count, length or budget that is not a number");
  }
  if (r.shape.count == 0 || r.shape.length == 0) return fail("an empty shape");
  if (!(r.budget_ms > 0)) return fail("a budget that is not positive");
  if (f[7] != "host" && f[7] != "device" && f[7] != "wide") return fail("result '" + f[7] + "'");
  r.device_result = f[7] != "host";
  r.wide_result = f[7] == "wide";
  if ((f[8] != "0" && f[8] != "1") || (f[9] != "0" && f[9] != "1")) return fail("a flag that is not 0 or 1");
  r.deterministic = f[8] == "1";
  r.allow_in_place = f[9] == "1";
  r.store_path = f[11];
  r.nvrtc_path = f[12];
  if (r.store_path.empty()) return fail("no store path");
  return r;
}

void stop_autotune_worker() { worker().stop(); }

TuneOutcome autotune_point(const TuneRequest& r) {
  try {
    return worker().tune(r);
  } catch (const std::exception& e) {
    return {TuneOutcome::Status::failed, e.what()};
  }
}

} // namespace reduce_tune::detail
