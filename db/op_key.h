// reduce-tune: what the store keys an op by. A built-in Op is stored under its name ("sum"); a
// user reduction (reduce_tune/reduction.h) under "user:" and the 16 hex digits of its hash, the
// name Reduction::name() gives it, so that its measurements and best rows are its own.
#pragma once

#include "reduce_tune/config.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace reduce_tune::db {

/// A built-in Op or a user reduction's hash.
class OpKey {
public:
  /// A built-in op (implicit: every call that names an Op names its key).
  OpKey(Op op) : op_(op) {} // NOLINT(google-explicit-constructor)
  /// A user reduction's key from its hash (Reduction::hash).
  static OpKey user(std::uint64_t hash) {
    OpKey k(Op::sum);
    k.user_ = hash;
    return k;
  }

  bool is_user() const { return user_.has_value(); }
  /// The built-in op; nullopt for a user reduction.
  std::optional<Op> builtin() const { return user_ ? std::nullopt : std::optional<Op>(op_); }
  /// The user reduction's hash; nullopt for a built-in op.
  std::optional<std::uint64_t> hash() const { return user_; }
  /// As stored: "sum", or "user:0123456789abcdef".
  std::string name() const;

  friend bool operator==(const OpKey& a, const OpKey& b) { return a.op_ == b.op_ && a.user_ == b.user_; }
  friend bool operator!=(const OpKey& a, const OpKey& b) { return !(a == b); }
  /// An order for maps: the built-in ops first, in enum order, then the user hashes.
  friend bool operator<(const OpKey& a, const OpKey& b) {
    if (a.user_.has_value() != b.user_.has_value()) return !a.user_.has_value();
    return a.user_ ? *a.user_ < *b.user_ : a.op_ < b.op_;
  }

private:
  Op op_;
  std::optional<std::uint64_t> user_;
};

/// The prefix of a user reduction's stored name.
inline constexpr std::string_view kUserPrefix = "user:";

/// The key a stored name names: a built-in op's name, or "user:" and exactly 16 lower-case hex
/// digits; nullopt for anything else (a newer build's op).
std::optional<OpKey> parse_op_key(std::string_view text);

} // namespace reduce_tune::db
