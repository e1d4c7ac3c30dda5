// reduce-tune store: claims on points tuned on first use (db/claims.h).
#include "db/claims.h"

#include "db/store_impl.h"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <thread>

namespace reduce_tune::db {

using namespace sql;

namespace {

std::string this_host() {
  char buf[256] = {};
  gethostname(buf, sizeof buf - 1);
  return buf;
}

} // namespace

std::string claim_owner(long pid) { return this_host() + ":" + std::to_string(pid); }

bool owner_gone(const Claim& c) {
  const std::size_t colon = c.owner.rfind(':');
  if (colon == std::string::npos || c.owner.substr(0, colon) != this_host()) return false;
  long pid = 0;
  try {
    pid = std::stol(c.owner.substr(colon + 1));
  } catch (const std::exception&) {
    return false;
  }
  if (pid <= 0) return false;
  return kill(pid_t(pid), 0) != 0 && errno == ESRCH; // EPERM: it runs, as another user
}

std::optional<Claim> Store::claim(const PointKey& p, const std::string& owner, double lease_s,
                                  const std::function<bool(const Claim&)>& stale) {
  std::optional<Claim> held;
  impl_->write([&] {
    held.reset();
    const auto now_q = impl_->query("SELECT (julianday('now') - 2440587.5) * 86400.0");
    now_q->step();
    const double now = now_q->real(0);
    const auto q = impl_->query("SELECT owner, expires FROM claims WHERE device_uuid = ?1 AND dtype = ?2 AND "
                                "op = ?3 AND problem = ?4 AND count = ?5 AND n = ?6",
                                p.device_uuid, name(p.dtype), p.op_key().name(), name(p.problem),
                                sql_size(p.shape.count), sql_size(p.shape.length));
    if (q->step()) {
      Claim c{q->text(0), q->real(1)};
      if (c.owner != owner && c.expires > now && !(stale && stale(c))) {
        held = c;
        return; // the transaction commits nothing
      }
    }
    impl_->query("INSERT INTO claims (device_uuid, dtype, op, problem, count, n, owner, expires) "
                 "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8) ON CONFLICT (device_uuid, dtype, op, problem, count, n) "
                 "DO UPDATE SET owner = excluded.owner, expires = excluded.expires",
                 p.device_uuid, name(p.dtype), p.op_key().name(), name(p.problem), sql_size(p.shape.count),
                 sql_size(p.shape.length), owner, now + lease_s)
        ->step();
  });
  return held;
}

void Store::release_claims(const std::string& owner) {
  impl_->write([&] { impl_->query("DELETE FROM claims WHERE owner = ?1", owner)->step(); });
}

std::vector<std::pair<PointKey, Claim>> Store::claims() const {
  std::vector<std::pair<PointKey, Claim>> out;
  const auto q = impl_->query("SELECT device_uuid, dtype, op, problem, count, n, owner, expires FROM claims "
                              "ORDER BY device_uuid, dtype, op, problem, count, n");
  while (q->step()) {
    const auto dtype = parse_dtype(q->text(1));
    const auto op = parse_op_key(q->text(2));
    const auto problem = parse_problem(q->text(3));
    if (!dtype || !op || !problem) continue;
    PointKey k{q->text(0), *dtype, op->builtin().value_or(Op::sum), *problem,
               Shape{std::uint64_t(q->i64(4)), std::uint64_t(q->i64(5))}, op->hash()};
    out.emplace_back(std::move(k), Claim{q->text(6), q->real(7)});
  }
  return out;
}

Acquired acquire_point(Store& store, const PointKey& point, const std::string& owner, double lease_s,
                       double wait_s, const std::function<bool()>& tuned) {
  using Clock = std::chrono::steady_clock;
  const auto until = Clock::now() + std::chrono::duration<double>(std::max(wait_s, 0.0));
  for (;;) {
    if (tuned && tuned()) return Acquired::tuned;
    if (!store.claim(point, owner, lease_s, owner_gone)) {
      // Claimed; the holder before may have stored the point just before it let go.
      if (tuned && tuned()) {
        store.release_claims(owner);
        return Acquired::tuned;
      }
      return Acquired::claimed;
    }
    if (Clock::now() >= until) return Acquired::busy;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

} // namespace reduce_tune::db
