// reduce-tune: the Reducer's entries, one per (problem, shape bucket, dtype, op, result): where they
// are kept, and how one is filled: its configuration looked up once (the user's store, the shipped
// tuning, the built-in default: runtime/lookup.h), its kernel loaded once (through the disk cache).
#include "runtime/entry_cache.h"

#include "kernels/user_op.h"
#include "runtime/autotune.h"
#include "runtime/defaults.h"

#include "runtime/lookup.h"
#include "runtime/reducer_state.h"

#include <algorithm>
#include <bit>
#include <cstdio>

namespace reduce_tune::detail {

EntryKey entry_key(Problem problem, DType dtype, Op op, Shape shape, Result result) {
  if (problem == Problem::array) shape = {1, std::max<std::uint64_t>(shape.length, 1)};
  return {problem, dtype, op, result, lookup_point(shape)};
}

Entry& EntryCache::at(const EntryKey& k) {
  const std::size_t table =
      ((std::size_t(k.problem) * kDTypes + std::size_t(k.dtype)) * kOps + std::size_t(k.op)) *
          kResults +
      std::size_t(k.result);
  const bool array = k.problem == Problem::array;
  const std::size_t length = std::size_t(std::bit_width(k.at.length));
  const std::size_t slot = array ? length : std::size_t(std::bit_width(k.at.count)) * kBuckets + length;
  if (std::atomic<Entry*>* slots = tables_[table].load(std::memory_order_acquire))
    if (Entry* e = slots[slot].load(std::memory_order_acquire)) return *e;
  std::lock_guard lock(mu_);
  std::atomic<Entry*>* slots = tables_[table].load(std::memory_order_relaxed);
  if (!slots) {
    // Value-initialized: every slot null.
    owned_tables_.push_back(std::make_unique<std::atomic<Entry*>[]>(array ? kBuckets : kBuckets * kBuckets));
    slots = owned_tables_.back().get();
    tables_[table].store(slots, std::memory_order_release);
  }
  if (Entry* e = slots[slot].load(std::memory_order_relaxed)) return *e;
  owned_.push_back(std::make_unique<Entry>());
  slots[slot].store(owned_.back().get(), std::memory_order_release);
  return *owned_.back();
}

std::size_t EntryCache::size() const {
  std::lock_guard lock(mu_);
  return owned_.size();
}

} // namespace reduce_tune::detail

namespace reduce_tune {

Requirements Reducer::Impl::requirements(Result result) const {
  Requirements req;
  req.deterministic = options.deterministic;
  req.allow_in_place = options.allow_in_place;
  req.device_result = result != Result::host;
  req.wide_result = result == Result::wide;
  return req;
}

Choice Reducer::Impl::choose(const EntryKey& k) {
  const Requirements req = requirements(k.result);
  std::lock_guard lock(store_mu);
  try {
    return lookup(store.get(), shipped.get(), device, k.dtype, k.op, k.problem, k.at, req, no_store);
  } catch (const db::StoreError& e) {
    return builtin_choice(k.problem, k.dtype, k.op, k.at, req, device,
                          std::string("the tuning store could not be read: ") + e.what());
  }
}

Choice Reducer::Impl::choice(const EntryKey& k) {
  Entry& e = entries.at(k);
  if (e.ready.load(std::memory_order_acquire)) return *e.choice;
  std::lock_guard lock(e.mu);
  if (!e.choice) e.choice = choose(k);
  return *e.choice;
}

const Entry& Reducer::Impl::ready(const EntryKey& k, Use use) {
  Entry& e = entries.at(k);
  if (e.ready.load(std::memory_order_acquire)) return e;
  return make_ready(e, k, use, nullptr);
}

const Entry& Reducer::Impl::make_ready(Entry& e, const EntryKey& k, Use use, const std::shared_ptr<const UserOp>& user) {
  std::lock_guard lock(e.mu);
  if (e.ready.load(std::memory_order_relaxed)) return e;
  if (!e.choice) e.choice = user ? choose_user(*user, k) : choose(k);
  const FirstUse first = first_use(autotune, e.choice->match, use, k.problem, k.at);
  if (first == FirstUse::provisional) {
    // Never tuned inside a capture (nor by a question): the store's answer serves it, and the
    // entry stays unready so the next call tunes the point.
    if (!e.provisional) {
      auto p = std::make_unique<Entry>();
      p->choice = e.choice;
      load(*p, k, user);
      note_point(k, *p->choice, user.get());
      p->ready.store(true, std::memory_order_release);
      e.provisional = std::move(p);
    }
    return *e.provisional;
  }
  if (first == FirstUse::tune && !e.tune_asked) {
    e.tune_asked = true;
    tune_first(e, k, user);
  }
  load(e, k, user);
  // Once an entry: the calls after it find it ready.
  if (record || autotune) note_point(k, *e.choice, user.get());
  e.ready.store(true, std::memory_order_release);
  return e;
}

void Reducer::Impl::load(Entry& e, const EntryKey& k, const std::shared_ptr<const UserOp>& user) {
  if (user) {
    e.kernel = loader.load(e.choice->config, k.dtype, user); // ReductionError: the description's log
    return;
  }
  try {
    e.kernel = loader.load(e.choice->config, k.dtype, k.op, k.result == Result::wide);
  } catch (const CompileError& err) {
    fall_back(e, k, err);
  } catch (const cuda::CudaError& err) {
    fall_back(e, k, err);
  }
}

void Reducer::Impl::tune_first(Entry& e, const EntryKey& k, const std::shared_ptr<const UserOp>& user) {
  try {
    TuneRequest r;
    r.device_uuid = device.uuid;
    r.dtype = k.dtype, r.op = k.op, r.problem = k.problem, r.shape = k.at;
    r.user = user;
    // A user reduction's calls all write device memory (choose_user's requirements).
    const Requirements req = requirements(user ? Result::device : k.result);
    r.device_result = req.device_result, r.wide_result = req.wide_result;
    r.deterministic = req.deterministic, r.allow_in_place = req.allow_in_place;
    r.budget_ms = autotune_budget_ms(options.autotune_ms);
    r.store_path = options.store_path.empty() ? db::default_store_path() : options.store_path;
    r.nvrtc_path = options.nvrtc_path;
    const TuneOutcome t = autotune_point(r);
    if (t.status != TuneOutcome::Status::tuned && t.status != TuneOutcome::Status::tuned_elsewhere) {
      std::string why = "not tuned on first use (" + std::string(name(t.status)) +
                        (t.note.empty() ? "" : ": " + t.note) + ")";
      e.choice->note = e.choice->note.empty() ? why : e.choice->note + "; " + why;
      return;
    }
    {
      std::lock_guard lock(store_mu);
      if (!store) store = std::make_unique<db::Store>(r.store_path); // the worker made it
    }
    e.choice = user ? choose_user(*user, k) : choose(k);
    char took[96];
    std::snprintf(took, sizeof took, "tuned on first use: %.0f ms, %zu measurements", t.ms, t.measured);
    e.choice->note = e.choice->note.empty() ? took : std::string(took) + "; " + e.choice->note;
  } catch (const std::exception& err) {
    // Tuning never fails a call: it runs with what the lookup had.
    e.choice->note += std::string(e.choice->note.empty() ? "" : "; ") + "not tuned on first use: " + err.what();
  }
}

void Reducer::Impl::fall_back(Entry& e, const EntryKey& k, const std::exception& err) {
  if (e.choice->match == Match::builtin) throw;
  std::string why = err.what();
  why = why.substr(0, why.find('\n')); // a compile error's log follows its first line
  // The entry's own requirements (a device result for the segmented and async calls).
  e.choice = builtin_choice(k.problem, k.dtype, k.op, k.at, requirements(k.result), device,
                            "the stored configuration " + key(e.choice->config) +
                                " failed to load: " + why);
  e.kernel = loader.load(e.choice->config, k.dtype, k.op, k.result == Result::wide);
}

} // namespace reduce_tune
