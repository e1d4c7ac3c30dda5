// reduce-tune store: the stored names of ops (db/op_key.h).
#include "db/op_key.h"

#include <cstdio>

namespace reduce_tune::db {

std::string OpKey::name() const {
  if (!user_) return std::string(reduce_tune::name(op_));
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(*user_));
  return std::string(kUserPrefix) + hex;
}

std::optional<OpKey> parse_op_key(std::string_view text) {
  if (auto op = parse_op(text)) return OpKey(*op);
  if (!text.starts_with(kUserPrefix)) return std::nullopt;
  const std::string_view hex = text.substr(kUserPrefix.size());
  if (hex.size() != 16) return std::nullopt;
  std::uint64_t h = 0;
  for (char c : hex) {
    const int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
    if (d < 0) return std::nullopt;
    h = h << 4 | std::uint64_t(d);
  }
  return OpKey::user(h);
}

} // namespace reduce_tune::db
