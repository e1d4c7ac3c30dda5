# Every public header alone, as C++17 (the library's own sources are C++20; its users need not
# be): compiled by -DCXX= with -std=c++17 and warnings as errors, from -DINCLUDE_DIR= only (the
# headers need no CUDA header either), except reduce_tune/half.h, which is CUDA's half types in
# the typed helpers and gets -DCUDA_INCLUDE_DIR= too. With it: dtype_of of __nv_bfloat16 and
# __half, from half.h and from reducer.h included after CUDA's headers. Run with -DCXX=
# -DINCLUDE_DIR= -DWORK_DIR= [-DCUDA_INCLUDE_DIR=].
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
# reducer.h after CUDA's half headers: the typed helpers take them without naming half.h.
if(CUDA_INCLUDE_DIR)
  set(tu "${WORK_DIR}/cuda_headers_first.cpp")
  file(WRITE "${tu}" "#include <cuda_fp16.h>\n#include <cuda_bf16.h>\n#include <reduce_tune/reducer.h>\n${half_check}")
  execute_process(COMMAND "${CXX}" -std=c++17 -pedantic-errors -Wall -Wextra -Werror -fsyntax-only
                          "-I${INCLUDE_DIR}" "-isystem${CUDA_INCLUDE_DIR}" "${tu}"
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(rc EQUAL 0)
    message(STATUS "reducer.h after cuda_fp16.h and cuda_bf16.h: dtype_of ok")
  else()
    message(FATAL_ERROR "reducer.h after CUDA's half headers:\n${out}")
  endif()
endif()
