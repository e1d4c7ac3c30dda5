# `reduce-tune query --lookup`: the library's graded choice from the shipped tuning alone (no store
# of the user's: none is created), without a GPU. Run as:
#   cmake -DCLI=path/to/reduce-tune -DSHIPPED=share/reduce-tune/tuning.db -DWORK=dir -P cli_query_lookup.cmake
file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${WORK}")
set(db "${WORK}/absent.db")
set(h100 "model:NVIDIA H100 80GB HBM3")
function(expect code pattern)
  execute_process(COMMAND ${CMAKE_COMMAND} -E env "REDUCE_TUNE_SHIPPED_DB=${SHIPPED}" ${CLI} query --db ${db} ${ARGN}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 30)
  if(NOT rc STREQUAL "${code}" OR NOT "${out}${err}" MATCHES "${pattern}")
    message(SEND_ERROR "reduce-tune query ${ARGN}: exit ${rc} (expected ${code}), output:\n${out}${err}\n(expected to match '${pattern}')")
  endif()
endfunction()

# The shipped float32 sum; 2^23 - 1 is looked up where the Reducer does, at its bucket's lower end
# 2^22, so it gets what 2^22 gets (looked up as it is, it would tie between the rows of 2^22 and
# 2^24 and take 2^24's).
execute_process(COMMAND ${CMAKE_COMMAND} -E env "REDUCE_TUNE_SHIPPED_DB=${SHIPPED}" ${CLI} query --db ${db}
                --lookup --uuid ${h100} --dtype float32 --op sum --n 2^22 OUTPUT_VARIABLE at_bucket)
string(REGEX MATCH "-> [^ ]+  shipped \\([0-9.]+ us at n=2\\^[0-9]+ on NVIDIA H100 80GB HBM3 \\(shipped\\)\\)" chosen "${at_bucket}")
if(NOT chosen)
  message(SEND_ERROR "query --lookup float32 sum 2^22: ${at_bucket}")
endif()
string(REPLACE "(" "\\(" chosen "${chosen}")
string(REPLACE ")" "\\)" chosen "${chosen}")
string(REPLACE "." "\\." chosen "${chosen}")
string(REPLACE "^" "\\^" chosen "${chosen}")
expect(0 "float32 sum n=8388607 ${chosen}" --lookup --uuid ${h100} --dtype float32 --op sum --n 8388607)
# A max over offsets has no shipped rows: the float32 sum's, said so.
expect(0 "float32 max segments 2\\^20 x 2\\^4 -> segments_[a-z_]+\\.[^ ]+  related \\([0-9.]+ us at 2\\^20 x 2\\^4 on [^)]+\\)\\); tuned for float32 sum"
       --lookup --uuid ${h100} --dtype float32 --op max --problem segments --shape 2^20x16)
# float64 columns: 4-byte rows, two float64 a vector where they load four 4-byte elements.
expect(0 "float64 sum columns .* related .*tuned for (float32|int32) sum"
       --lookup --uuid ${h100} --dtype float64 --op sum --problem columns --shape 65536x256)
# The 1-D reduction of another element size keeps the built-in default.
expect(0 "float64 max n=2\\^24 -> (vectorized|streaming)\\.[^ ]+  builtin; no tuning for float64 max"
       --lookup --uuid ${h100} --dtype float64 --op max --n 2^24)
expect(1 "no device GPU-nope in .* or the shipped tuning" --lookup --uuid GPU-nope --n 2^20)
expect(2 "query --lookup needs --uuid or --device" --lookup --n 2^20)
if(EXISTS "${db}")
  message(SEND_ERROR "query --lookup created ${db}")
endif()
