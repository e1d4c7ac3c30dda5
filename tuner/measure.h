// reduce-tune: what the array and the segmented sweeps share when they measure one point: the
// verdict of its checked launch, how many timed repetitions it earns, and its timings.
#pragma once

#include "db/store.h"
#include "kernels/driver.h"
#include "kernels/ops.h"
#include "tuner/input_hash.h"
#include "tuner/reference.h"
#include "tuner/sweep.h"
#include "tuner/sweep_search.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace reduce_tune {

/// A checked launch longer than this and 4x the best so far is timing enough: the point is far
/// off the best and its one timing says so.
inline constexpr double kSingleTimingUs = 200;

template <typename T> double median(std::vector<T> v) {
  std::sort(v.begin(), v.end());
  const std::size_t m = v.size() / 2;
  return v.size() % 2 ? double(v[m]) : (double(v[m - 1]) + double(v[m])) / 2;
}

/// Records the check of a point's result in `m` (texts, validity, the error of a wrong result);
/// returns whether it passed.
inline bool record_check(const Check& chk, db::Measurement& m) {
  m.expected = chk.expected, m.observed = chk.observed;
  m.valid = chk.ok;
  if (!chk.ok)
    m.error = "wrong result: got " + chk.observed + ", expected " + chk.expected +
              (chk.bound > 0 ? " (error " + std::to_string(chk.error) + " > bound " +
                                   std::to_string(chk.bound) + ")"
                             : "");
  return chk.ok;
}

/// Records a point's timings in `m`: the median, min and max of the kernel times `kernel_ms` plus
/// `host_us` (the host finish's time, 0 for the others), the repetitions, and the rate of `bytes`
/// read at the median against the device's `peak_gbps`.
inline void record_times(const std::vector<float>& kernel_ms, double host_us, double bytes,
                         double peak_gbps, db::Measurement& m) {
  m.median_us = median(kernel_ms) * 1e3 + host_us;
  m.min_us = *std::min_element(kernel_ms.begin(), kernel_ms.end()) * 1e3 + host_us;
  m.max_us = *std::max_element(kernel_ms.begin(), kernel_ms.end()) * 1e3 + host_us;
  m.reps = int(kernel_ms.size());
  m.gbps = bytes / (m.median_us * 1e-6) / 1e9;
  m.pct_peak = 100 * m.gbps / peak_gbps;
}

/// Whether any of `ops` reads two inputs (dot): the sweeps then make a second one.
template <typename Ops> bool two_input_ops(const Ops& ops) {
  return std::any_of(ops.begin(), ops.end(), [](Op op) { return describe(op).traits.two_inputs; });
}
/// The seed of the second input from the first's: other values, the same spikes (make_input).
inline std::uint64_t second_input_seed(std::uint64_t seed) { return seed ^ 0x5bd1e9955bd1e995ull; }
/// How many inputs of the problem's size `op` reads (the bytes a measurement's rate counts).
inline double inputs_of(Op op) { return describe(op).traits.two_inputs ? 2 : 1; }

/// Adds the seconds a scope took to a phase's total (SweepTimes).
class PhaseTimer {
public:
  explicit PhaseTimer(double& total) : total_(total), t0_(std::chrono::steady_clock::now()) {}
  ~PhaseTimer() { total_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count(); }
  PhaseTimer(const PhaseTimer&) = delete;
  PhaseTimer& operator=(const PhaseTimer&) = delete;

private:
  double& total_;
  std::chrono::steady_clock::time_point t0_;
};

/// Checks an input after a sweep reduced it and throws unless the device still holds it: no
/// configuration may modify the caller's input. Given the input's host hash (tuner/input_hash.h),
/// the device hashes its copy and a match ends the check; else, or on a mismatch, it is read back
/// into one page-locked host buffer, grown to the largest input and kept, so a check costs the
/// copy at full speed and the comparison, not an allocation, a pageable copy and the page faults of
/// a fresh buffer each time. The comparison runs in parallel chunks: a 1 GiB input took longer to
/// compare on one core than to copy.
class InputCheck {
public:
  /// Reads every input back.
  InputCheck() = default;
  /// Hashes inputs on the device (compiled as the sweep's kernels), on `s`, where their host hash
  /// is given.
  InputCheck(const Nvrtc& nvrtc, CompileCache& cache, ArchTarget target, CUstream s)
      : hash_(std::make_unique<DeviceHash>(nvrtc, cache, std::move(target))), stream_(s) {}
  /// `what` names the problem in the message; `host_hash`: input_hash of `data`, where known.
  void operator()(CUdeviceptr d_in, const HostArray& data, const std::string& what,
                  std::optional<std::uint64_t> host_hash = std::nullopt) {
    const std::size_t bytes = data.bytes.size();
    ++count_;
    if (hash_ && host_hash) {
      try {
        if ((*hash_)(d_in, bytes, stream_) == *host_hash) return void(++hashed_);
      } catch (const cuda::CudaError&) {
        throw;
      } catch (const std::exception&) { // the hash kernel does not build: read every input back
        hash_.reset();
      }
    }
    if (bytes > host_.size()) {
      pin_.reset();
      host_ = std::vector<unsigned char>(bytes);
      pin_ = std::make_unique<cuda::HostRegistration>(host_.data(), host_.size());
    }
    if (bytes) RT_CU(cuMemcpyDtoH(host_.data(), d_in, bytes));
    if (!same_bytes(host_.data(), data.bytes.data(), bytes))
      throw std::runtime_error("the input buffer was modified during the sweep of " + what);
  }

  /// Whether a and b hold the same `bytes` bytes; in parallel chunks from 16 MiB on.
  static bool same_bytes(const unsigned char* a, const unsigned char* b, std::size_t bytes) {
    constexpr std::size_t kChunk = std::size_t(1) << 24;
    const std::size_t threads =
        std::min<std::size_t>(std::max(1u, std::thread::hardware_concurrency()), (bytes + kChunk - 1) / kChunk);
    if (threads <= 1) return bytes == 0 || std::memcmp(a, b, bytes) == 0;
    std::vector<char> differs(threads, 0);
    std::vector<std::thread> pool;
    for (std::size_t t = 0; t < threads; ++t)
      pool.emplace_back([&, t] {
        const std::size_t lo = bytes * t / threads, hi = bytes * (t + 1) / threads;
        differs[t] = std::memcmp(a + lo, b + lo, hi - lo) != 0;
      });
    for (std::thread& th : pool) th.join();
    return std::none_of(differs.begin(), differs.end(), [](char d) { return d != 0; });
  }

  /// Inputs checked so far; of them, those the device's hash passed (not read back).
  std::size_t count() const { return count_; }
  std::size_t hashed() const { return hashed_; }

private:
  std::size_t count_ = 0, hashed_ = 0;
  std::unique_ptr<DeviceHash> hash_;
  CUstream stream_ = nullptr;
  std::vector<unsigned char> host_;
  std::unique_ptr<cuda::HostRegistration> pin_;
};

/// SweepOptions::deadline_s at one point: count() sees each candidate's time (measure's return),
/// and the search is past the deadline once the point holds kDeadlineFloor measurements, one of
/// them valid, and the next one, expected to take the median wall time of those so far (loads and
/// lazy compiles included), would end past it: a search that starts a measurement just before
/// the deadline overran it by that measurement.
class PastDeadline {
public:
  explicit PastDeadline(double deadline_s) : deadline_s_(deadline_s), mark_s_(now_s()) {}
  double count(double us) {
    const double t = now_s();
    if (!std::isnan(us)) ++measured_, valid_ |= std::isfinite(us), took_s_.push_back(t - mark_s_);
    mark_s_ = t;
    return us;
  }
  /// The seconds the next measurement is expected to take (0 before any).
  double expected_s() const { return took_s_.empty() ? 0 : median(took_s_); }
  bool operator()() const {
    return deadline_s_ > 0 && measured_ >= kDeadlineFloor && valid_ && now_s() + expected_s() >= deadline_s_;
  }

private:
  static double now_s() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
  }
  double deadline_s_;
  double mark_s_; // when the last measurement ended (or the search began)
  std::size_t measured_ = 0;
  bool valid_ = false;
  std::vector<double> took_s_;
};

/// Seeds `search` with SweepOptions::first at each of `points` (sweep.cpp).
void seed_first(SweepSearch& search, const SweepOptions& o,
                const std::vector<std::pair<PointId, std::size_t>>& points);

} // namespace reduce_tune
