// reduce-tune: which directories the library trusts with the files that decide what runs. A kernel
// image in the compile cache runs in every process that loads it; a tuning store's rows pick the
// kernels every user of that tuning runs. So, as ssh refuses a key file that others can read, the
// compile cache and the stores refuse a directory that other users may write.
//
// The rule, on permission bits (ACLs are not read), for "others" (neither the owner nor the group):
//  - every ancestor of the directory: not writable by others unless sticky (/tmp): a writable,
//    non-sticky ancestor lets others rename the directory away and put their own in its place;
//  - a compile cache directory: not writable by others, sticky or not (its entries are found by
//    name, so anyone who may create files there may plant an entry before it is written);
//  - a store's directory: not writable by others unless sticky; in a sticky one the store file and
//    its -wal, -shm and -journal files, where present, must belong to this user or root (another
//    user could have created them first);
//  - a store file: not writable by others.
// Group write is allowed: a site shares a cache or a tuning store with its group on purpose
// (reduce-tune fleet submit --group-write); the owner of a directory is not checked (a site's
// tuning, owned by its administrator, is read by every user).
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <system_error>

namespace reduce_tune {

/// Why the compile cache directory `dir` cannot be trusted, or nullopt. `dir` must exist.
std::optional<std::string> untrusted_cache_dir(const std::filesystem::path& dir);

/// Why the store file `file` (existing or not) and its directory cannot be trusted, or nullopt.
/// The directory must exist.
std::optional<std::string> untrusted_store(const std::filesystem::path& file);

/// Creates `dir` and its missing parents as create_directories does, but without write access for
/// others (a umask of 000 would grant it): the directories this library creates pass its checks.
void create_private_directories(const std::filesystem::path& dir);

/// A compile cache directory refused by untrusted_cache_dir. A filesystem_error, so that callers
/// that fall back to no cache on a cache they cannot use do so here too; what() is the reason.
class UntrustedDirectory : public std::filesystem::filesystem_error {
public:
  UntrustedDirectory(const std::string& why, const std::filesystem::path& dir)
      : std::filesystem::filesystem_error(why, dir, std::make_error_code(std::errc::permission_denied)),
        why_(why) {}
  const char* what() const noexcept override { return why_.c_str(); }

private:
  std::string why_;
};

} // namespace reduce_tune
