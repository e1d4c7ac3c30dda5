// reduce-tune: a small reader of CUDA cubins (64-bit little-endian ELF, e_machine EM_CUDA = 190).
// Only section headers and .nv.info attributes are read; every offset is bounds-checked.
#include "tuner/cubin.h"

#include <cstring>
#include <vector>

namespace reduce_tune {
namespace {

constexpr int kEmCuda = 190;
constexpr unsigned kShtSymtab = 2;
// .nv.info attributes: 1 byte format, 1 byte attribute, then a 2-byte value (EIFMT_HVAL) or a
// 2-byte size and that many bytes (EIFMT_SVAL); other formats carry a 2-byte value or nothing.
constexpr unsigned kEifmtSval = 4;
constexpr unsigned kEiattrFrameSize = 0x11;
constexpr unsigned kEiattrRegcount = 0x2f;

struct Reader {
  std::string_view d;
  template <class T> T at(std::uint64_t off) const {
    if (off > d.size() || d.size() - off < sizeof(T)) throw CubinError("cubin: truncated ELF");
    T v;
    std::memcpy(&v, d.data() + off, sizeof(T));
    return v; // little-endian host and file (x86_64, aarch64)
  }
  std::string_view str(std::uint64_t table_off, std::uint64_t table_size, std::uint32_t off) const {
    if (off >= table_size || table_off + table_size > d.size()) throw CubinError("cubin: bad string table");
    const char* p = d.data() + table_off + off;
    return {p, strnlen(p, table_size - off)};
  }
};

struct Section {
  std::string_view name;
  std::uint32_t type = 0, link = 0, info = 0;
  std::uint64_t offset = 0, size = 0, entsize = 0;
};

} // namespace

bool is_elf(std::string_view image) { return image.size() >= 4 && image.substr(0, 4) == "\x7f" "ELF"; }

std::uint64_t sass_instructions(int sm, std::uint64_t code_bytes) {
  if (sm >= 70) return code_bytes / 16;
  const std::uint64_t words = code_bytes / 8;
  const std::uint64_t per_bundle = sm >= 50 ? 4 : 8; // words per bundle, the first is control
  return words / per_bundle * (per_bundle - 1) + (words % per_bundle ? words % per_bundle - 1 : 0);
}

CubinKernel inspect_cubin(std::string_view image, std::string_view kernel) {
  const Reader r{image};
  if (!is_elf(image)) throw CubinError("cubin: not an ELF image (PTX?)");
  if (r.at<std::uint8_t>(4) != 2 || r.at<std::uint8_t>(5) != 1)
    throw CubinError("cubin: not a 64-bit little-endian ELF");
  if (r.at<std::uint16_t>(18) != kEmCuda) throw CubinError("cubin: ELF machine is not CUDA");
  CubinKernel k;
  // ELF ABI version 7 (up to CUDA 12's older targets) keeps the SM in the low byte of e_flags;
  // version 8 (EI_OSABI 0x41, sm_90 and later from CUDA 12.8 on) in the second byte.
  const auto flags = r.at<std::uint32_t>(48);
  k.sm = r.at<std::uint8_t>(8) >= 8 ? int((flags >> 8) & 0xff) : int(flags & 0xff);

  const auto shoff = r.at<std::uint64_t>(40);
  const auto shentsize = r.at<std::uint16_t>(58);
  const auto shnum = r.at<std::uint16_t>(60);
  const auto shstrndx = r.at<std::uint16_t>(62);
  if (shentsize < 64 || shstrndx >= shnum) throw CubinError("cubin: bad section header table");
  std::vector<Section> secs(shnum);
  for (unsigned i = 0; i < shnum; ++i) {
    const std::uint64_t h = shoff + std::uint64_t(i) * shentsize;
    Section& s = secs[i];
    s.type = r.at<std::uint32_t>(h + 4);
    s.offset = r.at<std::uint64_t>(h + 24);
    s.size = r.at<std::uint64_t>(h + 32);
    s.link = r.at<std::uint32_t>(h + 40);
    s.info = r.at<std::uint32_t>(h + 44);
    s.entsize = r.at<std::uint64_t>(h + 56);
  }
  // Names, once the section-name string table is known.
  const Section& shstr = secs[shstrndx];
  for (unsigned i = 0; i < shnum; ++i)
    secs[i].name = r.str(shstr.offset, shstr.size, r.at<std::uint32_t>(shoff + std::uint64_t(i) * shentsize));

  const std::string text = ".text." + std::string(kernel);
  const Section* code = nullptr;
  const Section* symtab = nullptr;
  for (const Section& s : secs) {
    if (s.name == text) code = &s;
    if (s.type == kShtSymtab) symtab = &s;
  }
  if (!code) throw CubinError("cubin: no section " + text);
  if (code->size > image.size() || code->offset > image.size() - code->size) throw CubinError("cubin: " + text + " lies past the end");
  k.code_bytes = code->size;
  k.instructions = sass_instructions(k.sm, k.code_bytes);

  // The kernel's symbol index, which .nv.info attributes are keyed by.
  std::int64_t sym = -1;
  if (symtab && symtab->link < shnum && symtab->entsize >= 24) {
    const Section& strtab = secs[symtab->link];
    for (std::uint64_t i = 0; i < symtab->size / symtab->entsize; ++i) {
      const std::uint64_t e = symtab->offset + i * symtab->entsize;
      if (r.str(strtab.offset, strtab.size, r.at<std::uint32_t>(e)) == kernel && (r.at<std::uint8_t>(e + 4) & 0xf) == 2) {
        sym = std::int64_t(i); // STT_FUNC
        break;
      }
    }
  }
  for (const Section& s : secs) {
    if (s.name != ".nv.info" || sym < 0) continue;
    for (std::uint64_t p = s.offset; p + 4 <= s.offset + s.size;) {
      const unsigned fmt = r.at<std::uint8_t>(p), attr = r.at<std::uint8_t>(p + 1);
      if (fmt != kEifmtSval) {
        p += 4;
        continue;
      }
      const auto size = r.at<std::uint16_t>(p + 2);
      if (size >= 8 && r.at<std::uint32_t>(p + 4) == std::uint32_t(sym)) {
        const auto value = int(r.at<std::uint32_t>(p + 8));
        if (attr == kEiattrRegcount) k.registers = value;
        if (attr == kEiattrFrameSize) k.frame_bytes = value;
      }
      p += 4 + size;
    }
  }
  return k;
}

} // namespace reduce_tune
