// reduce-tune autotune-worker (tuner/autotune_worker.h).
#include "tuner/autotune_worker.h"

#include "db/claims.h"
#include "db/store.h"
#include "kernels/driver.h"
#include "kernels/nvrtc.h"
#include "kernels/user_op.h"
#include "runtime/autotune.h"
#include "runtime/lookup.h"
#include "tuner/supervisor.h"
#include "tuner/sweep.h"
#include "tuner/test_variants.h"

#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <sstream>
#include <vector>

namespace reduce_tune {
namespace {

using Clock = std::chrono::steady_clock;


/// The program that started the worker is gone (its end of the socket closed).
struct Orphaned {};

void say(const std::string& line) {
  std::string text = line;
  for (char& c : text)
    if (c == '\n') c = ' ';
  text += '\n';
  if (std::fwrite(text.data(), 1, text.size(), stdout) != text.size() || std::fflush(stdout) != 0)
    throw Orphaned{};
}

/// Text as the last field of a reply: its tabs and newlines (an NVRTC log's) made spaces.
std::string one_field(std::string text) {
  for (char& c : text)
    if (c == '\t' || c == '\n') c = ' ';
  return text;
}

std::string ms_text(Clock::time_point t0) {
  std::ostringstream o;
  o.precision(1);
  o << std::fixed << std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  return o.str();
}

/// Reads a line from fd 0 within kWorkerIdleS; false at its end or when idle that long.
bool next_line(std::string& buffer, std::string& line) {
  for (;;) {
    if (const std::size_t nl = buffer.find('\n'); nl != std::string::npos) {
      line = buffer.substr(0, nl);
      buffer.erase(0, nl + 1);
      return true;
    }
    pollfd p{STDIN_FILENO, POLLIN, 0};
    const int n = poll(&p, 1, int(kWorkerIdleS * 1000));
    if (n == 0) return false;
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    char buf[4096];
    const ssize_t got = read(STDIN_FILENO, buf, sizeof buf);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return false;
    buffer.append(buf, std::size_t(got));
  }
}

/// The configurations a test asks to be measured first ($REDUCE_TUNE_TEST_AUTOTUNE_FIRST, keys
/// separated by commas), honoured only where the test variants are registered.
std::vector<Config> test_first() {
  std::vector<Config> out;
  const char* e = std::getenv("REDUCE_TUNE_TEST_AUTOTUNE_FIRST");
  if (!e || !register_test_variants_from_env()) return out;
  std::stringstream in(e);
  for (std::string k; std::getline(in, k, ',');)
    if (auto c = parse_key(k)) out.push_back(*c);
  return out;
}

class Server {
public:
  /// Handles one request; returns false where the worker must end (a CUDA fault).
  bool handle(const detail::TuneRequest& r) {
    const auto t0 = Clock::now();
    std::string owner;
    std::int64_t run_id = 0;
    std::unique_ptr<db::Store> store;
    try {
      const int ordinal = ordinal_of(r.device_uuid);
      if (!contexts_.count(ordinal)) contexts_.emplace(ordinal, std::make_unique<cuda::Context>(ordinal));
      contexts_.at(ordinal)->make_current();
      store = std::make_unique<db::Store>(r.store_path);
      store->upsert_device(device_record(ordinal));
      const cuda::DeviceInfo info = cuda::device_info(ordinal);
      const DeviceKey device = device_key(info);
      Requirements req;
      req.device_result = r.device_result, req.wide_result = r.wide_result;
      req.deterministic = r.deterministic, req.allow_in_place = r.allow_in_place;
      const auto tuned = [&] {
        if (!r.user)
          return lookup(store.get(), nullptr, device, r.dtype, r.op, r.problem, r.shape, req).match == Match::exact;
        // A user reduction's own rows, under its hash, as the library's lookup_user takes them.
        Requirements own = req;
        own.user = r.user.get();
        const auto c = lookup_own(store.get(), nullptr, device, r.dtype, r.op_key(), r.problem, r.shape, own);
        return c && c->match == Match::exact;
      };
      owner = db::claim_owner(long(getpid()));
      const db::PointKey point{r.device_uuid, r.dtype, r.op, r.problem, r.shape,
                               r.user ? std::optional<std::uint64_t>(r.user->hash) : std::nullopt};
      switch (db::acquire_point(*store, point, owner, kClaimLeaseS, kClaimWaitS, tuned)) {
      case db::Acquired::tuned:
        say("done\ttuned_elsewhere\t" + ms_text(t0) + "\t0\t");
        return true;
      case db::Acquired::busy:
        say("done\tbusy\t" + ms_text(t0) + "\t0\tanother process has held the point for " +
            std::to_string(int(kClaimWaitS)) + " s");
        return true;
      case db::Acquired::claimed: break;
      }
      SweepOptions o;
      o.device = ordinal;
      o.dtypes = {r.dtype};
      o.ops = {r.op};
      // A user reduction is swept as `tune --reduction` sweeps it, in sum's place; with no CPU
      // evaluation in this process its measurements record that they were not checked.
      o.user = r.user;
      o.problem = r.problem;
      if (r.problem == Problem::array) o.sizes = {r.shape.length};
      else o.shapes = {r.shape};
      o.search = Strategy::guided;
      o.budget.percent = 5; // the replay's figures (docs/PERFORMANCE.md); the time limit comes first
      o.resume = true;      // skip what any run measured here: a configuration that faulted above all
      o.db_path = r.store_path;
      o.nvrtc_path = r.nvrtc_path;
      o.command_line = "reduce-tune autotune-worker (first use" + (r.user ? " of " + r.user->name : "") + ")";
      o.deadline_s = std::chrono::duration<double>(t0.time_since_epoch()).count() + r.budget_ms / 1e3;
      o.lazy_compile = true;
      o.requirements = req;
      o.first = first_;
      run_id = store->begin_run(run_record(o, r.device_uuid, nvrtc(r.nvrtc_path).version()));
      o.run_id = run_id;
      say("run\t" + std::to_string(run_id) + "\t" + owner);
      std::size_t measured = 0;
      const SweepResult res = sweep(o, [&](const Progress& p) {
        if (p.phase != "measure") return;
        ++measured;
        say("measure\t" + p.key);
      });
      store->end_run(run_id, "done");
      store->release_claims(owner);
      if (tuned()) {
        say("done\ttuned\t" + ms_text(t0) + "\t" + std::to_string(measured) + "\t");
      } else {
        // Why: the first check that failed, else the first configuration left out.
        std::string why = "no configuration this call may run passed its check";
        const auto failed = std::find_if(res.measurements.begin(), res.measurements.end(),
                                         [](const db::Measurement& m) { return !m.valid; });
        if (failed != res.measurements.end()) why += " (" + failed->key + ": " + failed->error + ")";
        else if (!res.skipped.empty()) why += " (" + res.skipped.front().reason + ")";
        say("done\tfailed\t" + ms_text(t0) + "\t" + std::to_string(measured) + "\t" + one_field(why));
      }
      return true;
    } catch (const Orphaned&) {
      // Nobody to reply to: the run ends as failed, the claim goes, and so does the worker.
      finish(store.get(), run_id, owner);
      throw;
    } catch (const cuda::CudaError& e) {
      if (!run_id) {
        // Before any kernel ran (no such GPU, no context for a second process): nothing is lost.
        finish(store.get(), run_id, owner);
        say("done\tfailed\t" + ms_text(t0) + "\t0\t" + one_field(e.what()));
        return true;
      }
      // The sweep recorded the configuration; the context is lost, so this process ends.
      finish(store.get(), run_id, owner);
      say("done\tfault\t" + ms_text(t0) + "\t0\t" + one_field(e.what()));
      return false;
    } catch (const std::exception& e) {
      // A user reduction's description that does not compile ends here too (ReductionError with
      // its first kernel's NVRTC log, from the sweep's lazy compile): nothing more to measure, and
      // the library's call compiles it itself and throws that log to the program.
      finish(store.get(), run_id, owner);
      say("done\tfailed\t" + ms_text(t0) + "\t0\t" + one_field(e.what()));
      return true;
    }
  }

private:
  static void finish(db::Store* store, std::int64_t run_id, const std::string& owner) {
    if (!store) return;
    try {
      if (run_id) store->end_run(run_id, "failed");
      if (!owner.empty()) store->release_claims(owner);
    } catch (const std::exception&) {
      // The claim lapses with this process.
    }
  }

  int ordinal_of(const std::string& uuid) {
    if (auto it = ordinals_.find(uuid); it != ordinals_.end()) return it->second;
    const int n = cuda::device_count();
    for (int i = 0; i < n; ++i)
      if (cuda::device_info(i).uuid == uuid) return ordinals_[uuid] = i;
    throw std::runtime_error("GPU " + uuid + " is not visible to the tuning worker");
  }

  Nvrtc& nvrtc(const std::string& path) {
    auto it = nvrtc_.find(path);
    if (it == nvrtc_.end()) it = nvrtc_.emplace(path, std::make_unique<Nvrtc>(path)).first;
    return *it->second;
  }

  std::map<std::string, int> ordinals_;
  std::map<int, std::unique_ptr<cuda::Context>> contexts_;
  std::map<std::string, std::unique_ptr<Nvrtc>> nvrtc_;
  std::vector<Config> first_ = test_first();
};

} // namespace

int serve_autotune() {
  std::signal(SIGINT, SIG_IGN);  // the program's Ctrl-C is the program's: its socket's end ends this
  std::signal(SIGPIPE, SIG_IGN); // a reply to a program that is gone fails, and the worker ends cleanly
  try {
    say("rt-autotune\t" + std::to_string(detail::kAutotuneProtocol) + "\tready");
    Server server;
    std::string buffer, line;
    while (next_line(buffer, line)) {
      std::string why;
      const auto r = detail::parse_request_line(line, &why);
      if (!r) {
        say("done\tfailed\t0\t0\tbad request: " + one_field(why));
        continue;
      }
      if (!server.handle(*r)) return kWorkerCudaFault;
    }
  } catch (const Orphaned&) {
  }
  return 0;
}

} // namespace reduce_tune
