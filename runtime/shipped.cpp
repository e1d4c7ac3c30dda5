// reduce-tune: the shipped tuning (embedded image, or a file named by the environment or the caller)
// and opening a user's existing store.
#include "runtime/shipped.h"

#include <cstdlib>
#include <filesystem>

// The image itself: share/reduce-tune/tuning.db, assembled into read-only data by .incbin (the
// build passes its path as RT_SHIPPED_TUNING_FILE), so no copy of it is made at start-up and the
// file is never looked for at run time. Hidden: each library that embeds it keeps its own.
#ifndef RT_SHIPPED_TUNING_FILE
#error "RT_SHIPPED_TUNING_FILE must name the shipped tuning database to embed"
#endif
__asm__(".pushsection .rodata\n"
        ".balign 16\n"
        ".globl rt_shipped_tuning_begin\n"
        ".hidden rt_shipped_tuning_begin\n"
        "rt_shipped_tuning_begin:\n"
        ".incbin \"" RT_SHIPPED_TUNING_FILE "\"\n"
        ".globl rt_shipped_tuning_end\n"
        ".hidden rt_shipped_tuning_end\n"
        "rt_shipped_tuning_end:\n"
        ".popsection\n");
extern "C" const unsigned char rt_shipped_tuning_begin[];
extern "C" const unsigned char rt_shipped_tuning_end[];

namespace reduce_tune {

std::span<const unsigned char> embedded_tuning() {
  return {rt_shipped_tuning_begin, static_cast<std::size_t>(rt_shipped_tuning_end - rt_shipped_tuning_begin)};
}

std::string ShippedSource::describe() const {
  switch (kind) {
  case Kind::none: return "switched off (REDUCE_TUNE_SHIPPED_DB is empty)";
  case Kind::file: return path;
  case Kind::embedded: break;
  }
  return "built into the library";
}

ShippedSource shipped_source(const std::string& preferred) {
  if (const char* e = std::getenv("REDUCE_TUNE_SHIPPED_DB"))
    return *e ? ShippedSource{ShippedSource::Kind::file, e} : ShippedSource{ShippedSource::Kind::none, {}};
  if (!preferred.empty()) return {ShippedSource::Kind::file, preferred};
  return {};
}

std::unique_ptr<db::Store> open_shipped_store(std::string* why, const std::string& preferred) {
  const ShippedSource source = shipped_source(preferred);
  std::string reason;
  try {
    switch (source.kind) {
    case ShippedSource::Kind::none: reason = "no shipped tuning"; break;
    case ShippedSource::Kind::file:
      // Store's read-only open never creates a file; say plainly when there is none.
      if (std::error_code ec; !std::filesystem::is_regular_file(source.path, ec))
        reason = "the shipped tuning " + source.path + " cannot be used: no such file";
      else
        return std::make_unique<db::Store>(source.path, db::Store::Mode::read_only);
      break;
    case ShippedSource::Kind::embedded:
      return std::make_unique<db::Store>(embedded_tuning(), "the shipped tuning built into the library");
    }
  } catch (const db::StoreError& e) {
    reason = "the shipped tuning " + source.describe() + " cannot be used: " + e.what();
  }
  if (why) *why = reason;
  return nullptr;
}

std::unique_ptr<db::Store> open_existing_store(const std::string& path, std::string* why) {
  std::string reason;
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    reason = "no tuning store at " + path;
  } else {
    try {
      return std::make_unique<db::Store>(path);
    } catch (const db::StoreError& e) {
      reason = "the tuning store " + path + " cannot be used: " + e.what();
    }
  }
  if (why) *why = reason;
  return nullptr;
}

} // namespace reduce_tune
