// Tests of the Reducer's entry cache (runtime/entry_cache.cpp): one entry per (problem, shape
// bucket, dtype, op, result), the 1-D calls as Shape{1, n}, made once under concurrent first use.
#include <catch2/catch.hpp>

#include "runtime/entry_cache.h"

#include <set>
#include <thread>
#include <vector>

using namespace reduce_tune;
using namespace reduce_tune::detail;

namespace {

constexpr std::uint64_t kMax = ~std::uint64_t(0);

Entry& at(EntryCache& cache, Problem p, Shape s, DType d = DType::f32, Op o = Op::sum,
          Result r = Result::device) {
  return cache.at(entry_key(p, d, o, s, r));
}

} // namespace

TEST_CASE("entry keys: the lookup point of the shape's bucket", "[entries]") {
  // The 1-D problem: {1, n}, n = 0 looked up as 1, each n at the lower end of [2^k, 2^(k+1)).
  CHECK(entry_key(Problem::array, DType::f32, Op::sum, {1, 0}, Result::host).at == Shape{1, 1});
  CHECK(entry_key(Problem::array, DType::f32, Op::sum, {1, 1000}, Result::host).at == Shape{1, 512});
  CHECK(entry_key(Problem::array, DType::f32, Op::sum, {1, kMax}, Result::host).at ==
        Shape{1, std::uint64_t(1) << 63});
  // Segmented: count and length bucketed alike; a length of 0 (offsets, lengths not known) kept.
  const EntryKey k = entry_key(Problem::segments, DType::i64, Op::max, {3000, 0}, Result::device);
  CHECK(k.at == Shape{2048, 0});
  CHECK(k.problem == Problem::segments);
  CHECK(k.dtype == DType::i64);
  CHECK(k.op == Op::max);
  CHECK(entry_key(Problem::rows, DType::f32, Op::sum, {0, 7}, Result::device).at == Shape{1, 4});
}

TEST_CASE("entry cache: one entry per bucket, distinct for every other part of the key",
          "[entries]") {
  EntryCache cache;
  // The same bucket: the same entry, for the 1-D problem and the segmented ones.
  Entry& a = at(cache, Problem::array, {1, 1024});
  CHECK(&at(cache, Problem::array, {1, 2047}) == &a);
  Entry& one = at(cache, Problem::array, {1, 1});
  CHECK(&at(cache, Problem::array, {1, 0}) == &one);
  Entry& r = at(cache, Problem::rows, {100, 100});
  CHECK(&at(cache, Problem::rows, {127, 64}) == &r);
  CHECK(cache.size() == 3);

  // Any other part of the key: another entry. The largest buckets are within range.
  std::set<const Entry*> seen{&a, &one, &r};
  const auto fresh = [&](Entry& e) { return seen.insert(&e).second; };
  CHECK(fresh(at(cache, Problem::array, {1, 2048})));
  CHECK(fresh(at(cache, Problem::array, {1, kMax})));
  CHECK(fresh(at(cache, Problem::array, {1, 1024}, DType::f64)));
  CHECK(fresh(at(cache, Problem::array, {1, 1024}, DType::f32, Op::max)));
  CHECK(fresh(at(cache, Problem::array, {1, 1024}, DType::f32, Op::sum, Result::host)));
  CHECK(fresh(at(cache, Problem::array, {1, 1024}, DType::f32, Op::sum, Result::wide)));
  CHECK(fresh(at(cache, Problem::columns, {100, 100})));
  CHECK(fresh(at(cache, Problem::segments, {100, 100})));
  CHECK(fresh(at(cache, Problem::rows, {128, 64})));
  CHECK(fresh(at(cache, Problem::rows, {100, 128})));
  CHECK(fresh(at(cache, Problem::segments, {100, 0})));
  CHECK(fresh(at(cache, Problem::segments, {kMax, kMax}, DType::f16, Op::max)));
  CHECK(fresh(at(cache, Problem::rows, {1, 1024}))); // not the array problem's {1, 1024}
  CHECK(cache.size() == seen.size());
}

TEST_CASE("entry cache: concurrent first uses of a key make one entry", "[entries]") {
  EntryCache cache;
  constexpr int kThreads = 8, kKeys = 64;
  std::vector<std::vector<const Entry*>> got(kThreads, std::vector<const Entry*>(kKeys));
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < kKeys; ++i) {
        const Problem p = i % 2 ? Problem::segments : Problem::array;
        got[t][i] = &at(cache, p, {std::uint64_t(1) << (i % 40), std::uint64_t(1) << (i / 2)});
      }
    });
  for (auto& th : threads) th.join();
  for (int t = 1; t < kThreads; ++t) CHECK(got[t] == got[0]);
  CHECK(std::set<const Entry*>(got[0].begin(), got[0].end()).size() == kKeys);
  CHECK(cache.size() == kKeys);
}
