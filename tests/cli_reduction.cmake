# `reduce-tune reduction FILE`: a good description named and compiled for each dtype it takes, a
# bad one's NVRTC log (the field and its line) and exit 1, a malformed file's line. NVRTC only.
# Run as: cmake -DCLI=path/to/reduce-tune -DEXAMPLE=examples/reductions/logsumexp.txt -DWORK=dir
# -P cli_reduction.cmake
file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${WORK}")
function(run out_var code)
  execute_process(COMMAND ${CLI} reduction ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out
                  ERROR_VARIABLE err TIMEOUT 300)
  if(NOT rc STREQUAL "${code}")
    message(SEND_ERROR "reduce-tune reduction ${ARGN}: exit ${rc} (expected ${code}):\n${out}${err}")
  endif()
  set(${out_var} "${out}${err}" PARENT_SCOPE)
endfunction()
function(expect text pattern)
  if(NOT "${text}" MATCHES "${pattern}")
    message(SEND_ERROR "reduce-tune reduction output does not match '${pattern}':\n${text}")
  endif()
endfunction()

run(out 0 ${EXAMPLE})
expect("${out}" "^user:[0-9a-f]+ \\(")
foreach(d float32 bfloat16 float16)
  expect("${out}" "\n  ${d} +-> ${d} +compiles")
endforeach()
expect("${out}" "\n  not additive \\(its accumulator 'lse' is not a scalar spelling\\): no atomic finish\n")

# A sum of squares: additive, so the atomic finishes apply.
file(WRITE "${WORK}/sumsq.txt" "map = x * x\ncombine = (a + b)\nidentity = 0.0f\ninputs = float32\n")
run(out 0 ${WORK}/sumsq.txt)
expect("${out}" "\n  additive: the sum's atomic finishes apply\n")

file(WRITE "${WORK}/bad.txt" "map = x * y\n")
run(out 1 ${WORK}/bad.txt --dtype float32)
expect("${out}" "map\\(1\\): error")

file(WRITE "${WORK}/malformed.txt" "map = x\nmapp = x\n")
run(out 1 ${WORK}/malformed.txt)
expect("${out}" "line 2: unknown key 'mapp'")
