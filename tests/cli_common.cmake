# What the CLI tests run as `cmake -DCLI=... -P` share: run(out_var code ARGS...) runs reduce-tune
# with ARGS and fails the test unless it exits with `code` (its output, both streams, in out_var);
# expect(text pattern) fails it unless text matches the regular expression.
function(run out_var code)
  execute_process(COMMAND ${CLI} ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 300)
  if(NOT rc STREQUAL "${code}")
    message(SEND_ERROR "reduce-tune ${ARGN}: exit ${rc} (expected ${code}):\n${out}${err}")
  endif()
  set(${out_var} "${out}${err}" PARENT_SCOPE)
endfunction()
function(expect text pattern)
  if(NOT "${text}" MATCHES "${pattern}")
    message(SEND_ERROR "output does not match '${pattern}':\n${text}")
  endif()
endfunction()
