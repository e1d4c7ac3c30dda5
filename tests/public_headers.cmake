# Every public header alone, as C++17 (the library's own sources are C++20; its users need not
# be): compiled by -DCXX= with -std=c++17 and warnings as errors, from -DINCLUDE_DIR= only (the
# headers need no CUDA header either), except reduce_tune/half.h, which includes CUDA's half types
# and gets -DCUDA_INCLUDE_DIR= too. With it: dtype_of of __nv_bfloat16 and __half from half.h, and
# the typed helpers of reducer.h called with them whichever comes first, reducer.h or CUDA's
# cuda_bf16.h and cuda_fp16.h: by -DCXX=, and, given -DNVCC=, by nvcc -std=c++17 as CUDA sources.
# Run with -DCXX= -DINCLUDE_DIR= -DWORK_DIR= [-DCUDA_INCLUDE_DIR= [-DNVCC=]].
cmake_policy(SET CMP0054 NEW) # "c++" and "nvcc" below are words, not variables
foreach(v CXX INCLUDE_DIR WORK_DIR)
  if(NOT ${v})
    message(FATAL_ERROR "public_headers.cmake: -D${v}=... is required")
  endif()
endforeach()
file(GLOB headers RELATIVE "${INCLUDE_DIR}" "${INCLUDE_DIR}/reduce_tune/*.h")
if(NOT headers)
  message(FATAL_ERROR "no public headers under ${INCLUDE_DIR}/reduce_tune")
endif()
file(MAKE_DIRECTORY "${WORK_DIR}")
set(failed 0)
if(CUDA_INCLUDE_DIR)
  list(GET CUDA_INCLUDE_DIR 0 CUDA_INCLUDE_DIR) # the toolkit's own, first of CUDAToolkit_INCLUDE_DIRS
endif()
set(half_check "static_assert(reduce_tune::dtype_of<__nv_bfloat16>() == reduce_tune::DType::bf16);
static_assert(reduce_tune::dtype_of<__half>() == reduce_tune::DType::f16);
static_assert(reduce_tune::dtype_of<float>() == reduce_tune::DType::f32);
")
foreach(h IN LISTS headers)
  string(MAKE_C_IDENTIFIER "${h}" id)
  set(tu "${WORK_DIR}/${id}.cpp")
  set(text "#include <${h}>\n#include <${h}> // and guarded against a second inclusion\n")
  set(extra)
  if(h STREQUAL "reduce_tune/half.h")
    if(NOT CUDA_INCLUDE_DIR)
      message(STATUS "${h}: skipped (no -DCUDA_INCLUDE_DIR)")
      continue()
    endif()
    set(extra "-isystem${CUDA_INCLUDE_DIR}")
    string(APPEND text "${half_check}")
  endif()
  file(WRITE "${tu}" "${text}")
  execute_process(COMMAND "${CXX}" -std=c++17 -pedantic-errors -Wall -Wextra -Werror -fsyntax-only
                          "-I${INCLUDE_DIR}" ${extra} "${tu}"
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(rc EQUAL 0)
    message(STATUS "${h}: C++17 ok")
  else()
    message(SEND_ERROR "${h} does not compile as C++17:\n${out}")
    math(EXPR failed "${failed} + 1")
  endif()
endforeach()
list(LENGTH headers count)
if(failed)
  message(FATAL_ERROR "${failed} of ${count} public headers are not C++17")
endif()
# Include order: reducer.h before or after CUDA's half headers, then calls of the typed helpers
# with __nv_bfloat16 and __half (compiled, never run).
if(CUDA_INCLUDE_DIR)
  set(calls "${half_check}
__nv_bfloat16 bf16_calls(reduce_tune::Reducer& r, const __nv_bfloat16* in, __nv_bfloat16* out) {
  r.sum_rows(in, 4, 8, out);
  r.max_segments(in, static_cast<const std::int64_t*>(nullptr), 4, out);
  return r.sum(in, 32);
}
__half f16_calls(reduce_tune::Reducer& r, const __half* in) { return r.min(in, 32); }
")
  set(reducer_first "#include <reduce_tune/reducer.h>\n#include <cuda_bf16.h>\n#include <cuda_fp16.h>\n")
  set(cuda_first "#include <cuda_bf16.h>\n#include <cuda_fp16.h>\n#include <reduce_tune/reducer.h>\n")
  foreach(order reducer_first cuda_first)
    set(head "${${order}}")
    file(WRITE "${WORK_DIR}/${order}.cpp" "${head}#include <cstdint>\n${calls}")
    file(WRITE "${WORK_DIR}/${order}.cu" "${head}#include <cstdint>\n${calls}")
    set(compilers "c++")
    if(NVCC)
      list(APPEND compilers "nvcc")
    endif()
    foreach(compiler IN LISTS compilers)
      if(compiler STREQUAL "c++")
        set(command "${CXX}" -std=c++17 -pedantic-errors -Wall -Wextra -Werror -fsyntax-only
                    "-I${INCLUDE_DIR}" "-isystem${CUDA_INCLUDE_DIR}" "${WORK_DIR}/${order}.cpp")
      else()
        set(command "${NVCC}" -std=c++17 -Werror all-warnings -Xcompiler=-Wall,-Wextra
                    "-I${INCLUDE_DIR}" -c "${WORK_DIR}/${order}.cu" -o "${WORK_DIR}/${order}.o")
      endif()
      execute_process(COMMAND ${command} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
      if(rc EQUAL 0)
        message(STATUS "${order} (${compiler}): typed helpers with __nv_bfloat16 and __half ok")
      else()
        message(FATAL_ERROR "${order} (${compiler}): the typed helpers fail with CUDA's half types:\n${out}")
      endif()
    endforeach()
  endforeach()
endif()
