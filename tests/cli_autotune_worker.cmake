# reduce-tune autotune-worker, the library's first-use tuning worker, as the library talks to it:
# its greeting names the protocol; a malformed request gets a failure reply and the worker goes on
# to the next; it ends with its input, exit 0. Without a GPU a request fails with the reason.
# Run as: cmake -DCLI=path/to/reduce-tune -DWORK=dir -P cli_autotune_worker.cmake
cmake_policy(SET CMP0007 NEW) # the reply lines as a list, empty ones kept
file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${WORK}")
string(ASCII 9 tab)
file(WRITE "${WORK}/requests"
  "garbage\n"
  "tune${tab}GPU-none${tab}float32${tab}sum${tab}array${tab}1${tab}1048576${tab}host${tab}0${tab}0${tab}300${tab}${WORK}/tuning.db${tab}\n")
execute_process(COMMAND "${CLI}" autotune-worker INPUT_FILE "${WORK}/requests" OUTPUT_VARIABLE out
                RESULT_VARIABLE rc TIMEOUT 60)
message(STATUS "exit ${rc}:\n${out}")
if(NOT rc EQUAL 0)
  message(SEND_ERROR "autotune-worker exited ${rc}")
endif()
string(REPLACE "\n" ";" lines "${out}")
list(LENGTH lines n)
if(n LESS 3)
  message(FATAL_ERROR "want a greeting and two replies, got: ${out}")
endif()
list(GET lines 0 hello)
list(GET lines 1 bad)
list(GET lines 2 second)
if(NOT hello STREQUAL "rt-autotune${tab}1${tab}ready")
  message(SEND_ERROR "greeting: '${hello}'")
endif()
if(NOT bad MATCHES "^done${tab}failed${tab}.*bad request")
  message(SEND_ERROR "a malformed request: '${bad}'")
endif()
# The second request: tuned where there is a GPU with that UUID (there is none), else failed.
if(NOT second MATCHES "^done${tab}failed${tab}[0-9.]+${tab}0${tab}.+")
  message(SEND_ERROR "a request for a GPU that is not there: '${second}'")
endif()
execute_process(COMMAND "${CLI}" autotune-worker --help RESULT_VARIABLE rc ERROR_VARIABLE err)
if(NOT rc EQUAL 2)
  message(SEND_ERROR "autotune-worker with options: exit ${rc} (want 2): ${err}")
endif()
