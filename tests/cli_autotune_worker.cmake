# reduce-tune autotune-worker, the library's first-use tuning worker, as the library talks to it:
# its greeting names the protocol; a malformed request gets a failure reply and the worker goes on
# to the next (a user reduction's description that does not parse, or that is not the reduction
# the request names, among them); it ends with its input, exit 0. Without a GPU a request fails
# with the reason, a well-formed user reduction's too.
# Run as: cmake -DCLI=path/to/reduce-tune -DWORK=dir -P cli_autotune_worker.cmake
cmake_policy(SET CMP0007 NEW) # the reply lines as a list, empty ones kept
file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${WORK}")
string(ASCII 9 tab)
# A user reduction's file with a block of several lines and a tab; its name from `reduction`
# (which also compiles it where NVRTC is there: its exit status does not matter here).
file(WRITE "${WORK}/sq.reduction" "map = sq(x)\npreamble <<EOF\n__device__ float sq(float v) {\n${tab}return v * v;\n}\nEOF\n")
execute_process(COMMAND "${CLI}" reduction "${WORK}/sq.reduction" OUTPUT_VARIABLE named TIMEOUT 60)
if(NOT named MATCHES "^(user:[0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f]) ")
  message(FATAL_ERROR "reduce-tune reduction printed no name: ${named}")
endif()
set(user "${CMAKE_MATCH_1}")
file(READ "${WORK}/sq.reduction" good HEX) # the protocol's encoding: lower-case hex
file(WRITE "${WORK}/bad.reduction" "map = x * x\nbogus_key = 1\n")
file(READ "${WORK}/bad.reduction" bad_hex HEX)
file(WRITE "${WORK}/other.reduction" "map = x * x * x\n")
file(READ "${WORK}/other.reduction" other_hex HEX)
set(head "${tab}GPU-none${tab}float32")
set(tail "${tab}array${tab}1${tab}1048576${tab}device${tab}0${tab}0${tab}300${tab}${WORK}/tuning.db${tab}")
file(WRITE "${WORK}/requests"
  "garbage\n"
  "tune${head}${tab}sum${tail}${tab}\n"
  "tune${head}${tab}${user}${tail}${tab}${bad_hex}\n"    # does not parse
  "tune${head}${tab}${user}${tail}${tab}${other_hex}\n"  # another reduction's description
  "tune${head}${tab}${user}${tail}${tab}not-hex\n"       # not hex
  "tune${head}${tab}${user}${tail}${tab}${good}\n")      # well-formed: no GPU of that UUID
execute_process(COMMAND "${CLI}" autotune-worker INPUT_FILE "${WORK}/requests" OUTPUT_VARIABLE out
                RESULT_VARIABLE rc TIMEOUT 60)
message(STATUS "exit ${rc}:\n${out}")
if(NOT rc EQUAL 0)
  message(SEND_ERROR "autotune-worker exited ${rc}")
endif()
string(REPLACE "\n" ";" lines "${out}")
list(LENGTH lines n)
if(n LESS 7)
  message(FATAL_ERROR "want a greeting and six replies, got: ${out}")
endif()
list(GET lines 0 hello)
list(GET lines 1 bad)
list(GET lines 2 second)
list(GET lines 3 unparsed)
list(GET lines 4 another)
list(GET lines 5 not_hex)
list(GET lines 6 user_reply)
if(NOT hello STREQUAL "rt-autotune${tab}2${tab}ready")
  message(SEND_ERROR "greeting: '${hello}'")
endif()
if(NOT bad MATCHES "^done${tab}failed${tab}.*bad request")
  message(SEND_ERROR "a malformed request: '${bad}'")
endif()
# The second request: tuned where there is a GPU with that UUID (there is none), else failed.
if(NOT second MATCHES "^done${tab}failed${tab}[0-9.]+${tab}0${tab}.+")
  message(SEND_ERROR "a request for a GPU that is not there: '${second}'")
endif()
# A user reduction's malformed descriptions: refused before any GPU is asked, saying why, each
# reply one line of five fields.
if(NOT unparsed MATCHES "^done${tab}failed${tab}0${tab}0${tab}bad request: the reduction ${user}: .*bogus_key")
  message(SEND_ERROR "a description that does not parse: '${unparsed}'")
endif()
if(NOT another MATCHES "^done${tab}failed${tab}0${tab}0${tab}bad request: a description of user:[0-9a-f]+ sent as ${user}$")
  message(SEND_ERROR "another reduction's description: '${another}'")
endif()
if(NOT not_hex MATCHES "^done${tab}failed${tab}0${tab}0${tab}bad request: .*hex")
  message(SEND_ERROR "a description that is not hex: '${not_hex}'")
endif()
foreach(reply unparsed another not_hex)
  string(REPLACE "${tab}" ";" fields "${${reply}}")
  list(LENGTH fields k)
  if(NOT k EQUAL 5)
    message(SEND_ERROR "the reply to ${reply} has ${k} fields: '${${reply}}'")
  endif()
endforeach()
# The well-formed one is read and goes on to the GPU, which is not there.
if(NOT user_reply MATCHES "^done${tab}failed${tab}[0-9.]+${tab}0${tab}.+" OR user_reply MATCHES "bad request")
  message(SEND_ERROR "a user reduction's request for a GPU that is not there: '${user_reply}'")
endif()
execute_process(COMMAND "${CLI}" autotune-worker --help RESULT_VARIABLE rc ERROR_VARIABLE err)
if(NOT rc EQUAL 2)
  message(SEND_ERROR "autotune-worker with options: exit ${rc} (want 2): ${err}")
endif()
