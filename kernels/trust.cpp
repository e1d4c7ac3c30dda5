// reduce-tune: the directories trusted with compile caches and tuning stores (the rule: trust.h).
#include "kernels/trust.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <vector>

namespace reduce_tune {
namespace {

namespace fs = std::filesystem;

std::string mode_text(mode_t m) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "%04o", unsigned(m & 07777));
  return buf;
}

bool others_write(mode_t m) { return m & S_IWOTH; }
bool sticky(mode_t m) { return m & S_ISVTX; }

/// The ancestors of the canonical `dir` (not itself), nearest first, that others may write and
/// that are not sticky: the first one, described, or nullopt.
std::optional<std::string> open_ancestor(const fs::path& dir) {
  for (fs::path p = dir.parent_path(); !p.empty(); p = p.parent_path()) {
    struct stat st {};
    if (stat(p.c_str(), &st) == 0 && others_write(st.st_mode) && !sticky(st.st_mode))
      return "its parent directory " + p.string() + " is writable by other users (mode " + mode_text(st.st_mode) +
             ") and not sticky: they could replace " + dir.string();
    if (p == p.root_path()) break;
  }
  return std::nullopt;
}

fs::path canonical_or_same(const fs::path& p) {
  std::error_code ec;
  fs::path c = fs::canonical(p.empty() ? fs::path(".") : p, ec);
  return ec ? p : c;
}

} // namespace

std::optional<std::string> untrusted_cache_dir(const fs::path& given) {
  const fs::path dir = canonical_or_same(given);
  struct stat st {};
  if (stat(dir.c_str(), &st) != 0) return std::nullopt; // opening it reports that
  if (others_write(st.st_mode))
    return "the compile cache directory " + dir.string() + " is writable by other users (mode " +
           mode_text(st.st_mode) + "): a kernel image there runs in every process that loads it; "
           "make it theirs to read only (chmod o-w) or use another (--cache-dir, REDUCE_TUNE_CACHE)";
  if (auto why = open_ancestor(dir)) return "the compile cache directory " + dir.string() + ": " + *why;
  return std::nullopt;
}

std::optional<std::string> untrusted_store(const fs::path& file) {
  const fs::path dir = canonical_or_same(file.parent_path());
  const fs::path name = file.filename();
  struct stat st {};
  if (stat(dir.c_str(), &st) != 0) return std::nullopt;
  const std::string what = "the tuning store " + (dir / name).string();
  if (others_write(st.st_mode) && !sticky(st.st_mode))
    return what + ": its directory is writable by other users (mode " + mode_text(st.st_mode) +
           "), who could replace the store, whose rows pick the kernels its users run; chmod o-w " +
           dir.string() + " or keep the store elsewhere";
  if (auto why = open_ancestor(dir)) return what + ": " + *why;
  const bool shared_dir = others_write(st.st_mode);
  for (const char* suffix : {"", "-wal", "-shm", "-journal"}) {
    const fs::path f = dir / (name.string() + suffix);
    struct stat fst {};
    if (lstat(f.c_str(), &fst) != 0) continue;
    if (S_ISREG(fst.st_mode) && others_write(fst.st_mode))
      return what + ": " + f.string() + " is writable by other users (mode " + mode_text(fst.st_mode) +
             "); chmod o-w it";
    if (shared_dir && fst.st_uid != geteuid() && fst.st_uid != 0)
      return what + ": " + f.string() + " in the shared directory " + dir.string() +
             " belongs to another user (uid " + std::to_string(fst.st_uid) + "), who may have put it there";
  }
  return std::nullopt;
}

void create_private_directories(const fs::path& dir) {
  std::vector<fs::path> missing;
  for (fs::path p = dir; !p.empty() && !fs::exists(p); p = p.parent_path()) {
    missing.push_back(p);
    if (p == p.parent_path()) break;
  }
  fs::create_directories(dir);
  for (const fs::path& p : missing) fs::permissions(p, fs::perms::others_write, fs::perm_options::remove);
}

} // namespace reduce_tune
