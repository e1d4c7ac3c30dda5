# `reduce-tune coverage --uuid`: the grades per problem, dtype and op without a GPU, the shipped
# tuning's state, and the command that tunes the rest; a corrupt shipped file is reported, not fatal.
# Run as: cmake -DCLI=path/to/reduce-tune -DSHIPPED=share/reduce-tune/tuning.db -DWRITER=rt_store_writer
# -DWORK=dir -P cli_coverage.cmake
file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${WORK}")
set(h100 "model:NVIDIA H100 80GB HBM3")
function(run out_var code shipped)
  execute_process(COMMAND ${CMAKE_COMMAND} -E env "REDUCE_TUNE_SHIPPED_DB=${shipped}" ${CLI} coverage ${ARGN}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 120)
  if(NOT rc STREQUAL "${code}")
    message(SEND_ERROR "reduce-tune coverage ${ARGN}: exit ${rc} (expected ${code}):\n${out}${err}")
  endif()
  set(${out_var} "${out}${err}" PARENT_SCOPE)
endfunction()
function(expect text pattern)
  if(NOT "${text}" MATCHES "${pattern}")
    message(SEND_ERROR "coverage output does not match '${pattern}':\n${text}")
  endif()
endfunction()

# The shipped tuning alone: float32 sums shipped on every problem, float32 max related, float64
# 1-D the built-in default; the command tunes every problem, with this --db.
run(out 0 "${SHIPPED}" --uuid ${h100} --db ${WORK}/absent.db)
expect("${out}" "shipped tuning: +${SHIPPED} \\((NVIDIA H100 80GB HBM3, NVIDIA H200|NVIDIA H200, NVIDIA H100 80GB HBM3)\\)") # the models in the file's order
foreach(p array rows columns segments)
  expect("${out}" "\n${p} +float32 +sum +shipped [0-9]+/[0-9]+ ")
endforeach()
expect("${out}" "\narray +float32 +max +related [0-9]+/[0-9]+ +\\(tuned for float32 sum\\)")
expect("${out}" "\narray +float64 +max +builtin [0-9]+/[0-9]+\n")
expect("${out}" "reduce-tune tune --device N --problem array --dtypes [a-z0-9,]+ --ops max,min,sum --db ${WORK}/absent.db && ")
if(EXISTS "${WORK}/absent.db")
  message(SEND_ERROR "coverage created ${WORK}/absent.db")
endif()

# The user's store holds the H100's rows (a copy of the shipped file): exact; a corrupt shipped file
# is named with the reason and the grades go on.
file(COPY_FILE "${SHIPPED}" "${WORK}/mine.db")
file(WRITE "${WORK}/corrupt.db" "not a database")
run(out 0 "${WORK}/corrupt.db" --uuid ${h100} --db ${WORK}/mine.db)
expect("${out}" "shipped tuning: +none: the shipped tuning ${WORK}/corrupt.db cannot be used: .*not a SQLite database")
expect("${out}" "\nrows +float32 +sum +exact [0-9]+/[0-9]+[,\n]")
if(NOT "${out}" MATCHES "recorded without an exact tuning")
else()
  message(SEND_ERROR "coverage lists recorded points where none were recorded:\n${out}")
endif()
# A call point a program recorded on a GPU of this model: listed with its grades then and now.
execute_process(COMMAND ${WRITER} record ${WORK}/mine.db GPU-elsewhere "NVIDIA H100 80GB HBM3" RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(SEND_ERROR "rt_store_writer record: exit ${rc}")
endif()
run(out 0 "${SHIPPED}" --uuid ${h100} --db ${WORK}/mine.db)
expect("${out}" "\n1 call points recorded without an exact tuning \\(reduce-tune tune --recorded tunes them\\):\n")
expect("${out}" "\n  rows +float64 +max +1024 x 4096: related when recorded, [a-z_]+ now\n")
# A user reduction's point: listed by its name, graded now by its own lookup from the description
# the store keeps (sum's rows of this GPU serve it: related).
execute_process(COMMAND ${WRITER} record-user ${WORK}/mine.db GPU-elsewhere "NVIDIA H100 80GB HBM3"
                RESULT_VARIABLE rc OUTPUT_VARIABLE user OUTPUT_STRIP_TRAILING_WHITESPACE)
if(NOT rc EQUAL 0 OR NOT user MATCHES "^user:[0-9a-f]+$")
  message(SEND_ERROR "rt_store_writer record-user: exit ${rc}, '${user}'")
endif()
run(out 0 "${SHIPPED}" --uuid ${h100} --db ${WORK}/mine.db)
expect("${out}" "\n2 call points recorded without an exact tuning")
expect("${out}" "\n  rows +float32 +${user} 1024 x 4096: related when recorded, related now\n")
expect("${out}" "\n  rows +float64 +max +1024 x 4096: related when recorded, [a-z_]+ now\n")

# Bad input: exit 2 with the reason; an unknown GPU exit 1.
run(out 2 "${SHIPPED}" --db ${WORK}/absent.db)
expect("${out}" "coverage needs one of --device or --uuid")
run(out 1 "${SHIPPED}" --uuid GPU-nope --db ${WORK}/absent.db)
expect("${out}" "no device GPU-nope")
