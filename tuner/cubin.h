// reduce-tune: what a cubin says about one kernel, read from its ELF (NVRTC cannot disassemble):
// the architecture, the size of the kernel's code and the SASS instruction count derived from it,
// and the register count and stack frame recorded in .nv.info.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

namespace reduce_tune {

/// An image that is not a well-formed CUDA ELF, or lacks the kernel.
class CubinError : public std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// One kernel of a cubin.
struct CubinKernel {
  int sm = 0;                    ///< SM the cubin was built for (e.g. 90), from e_flags
  std::uint64_t code_bytes = 0;  ///< size of .text.<kernel>, padding included
  std::uint64_t instructions = 0;///< SASS instructions, derived from code_bytes (see sass_instructions)
  int registers = -1;            ///< EIATTR_REGCOUNT; -1 when absent
  int frame_bytes = -1;          ///< EIATTR_FRAME_SIZE (stack frame); -1 when absent
};

/// The SASS instruction count of `code_bytes` of code for SM `sm`, as cuobjdump --dump-sass lists
/// them (the trailing branch-to-self and the NOP padding included; scheduling control words not):
///   sm_70 and later: 16-byte instructions, control bits inside each: bytes / 16;
///   sm_50 .. sm_6x:  8-byte words in 32-byte bundles of 1 control word + 3 instructions: bytes / 32 * 3;
///   sm_30 .. sm_3x:  8-byte words in 64-byte bundles of 1 control word + 7 instructions: bytes / 64 * 7.
/// A partial bundle counts its words after the control word. Derived from the code size: exact
/// against cuobjdump on sm_70+ (tests/test_cubin.cpp); for sm_3x..sm_6x, which today's cuobjdump
/// no longer disassembles, it assumes every bundle starts with a control word, where the last
/// bundle of a Kepler kernel can be the branch-to-self and NOP padding without one (then the
/// count is one slot low).
std::uint64_t sass_instructions(int sm, std::uint64_t code_bytes);

/// Reads `kernel` (its mangled or extern "C" name) from a cubin image. Throws CubinError when the
/// image is not a 64-bit CUDA ELF or has no .text.<kernel>.
CubinKernel inspect_cubin(std::string_view image, std::string_view kernel);

/// Whether `image` starts like an ELF file (as opposed to PTX text).
bool is_elf(std::string_view image);

} // namespace reduce_tune
