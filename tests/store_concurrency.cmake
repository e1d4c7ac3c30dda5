# Separate processes writing one database at once lose no row and never fail on "database is
# locked": WRITERS copies of rt_store_writer start together on a file that does not exist yet (so
# they also race to create the schema and switch it to WAL), each adding COUNT measurements in
# transactions of BATCH; then every writer's rows are counted. A second round writes into the
# same, now existing, file one measurement per transaction.
# Run as: cmake -DWRITER=path/to/rt_store_writer -DWORK=scratch/dir -P store_concurrency.cmake
if(NOT WORK)
  set(WORK "${CMAKE_CURRENT_BINARY_DIR}/store_concurrency")
endif()
set(WRITERS 4)
file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${WORK}")
set(db "${WORK}/shared.db")

# execute_process runs its COMMANDs concurrently, as a pipeline (each one's stdout into the next
# one's stdin; the writers print to stderr only, so none waits on a pipe).
function(round name count batch)
  set(cmds "")
  foreach(w RANGE 1 ${WRITERS})
    list(APPEND cmds COMMAND "${WRITER}" write "${db}" "GPU-${name}-${w}" ${count} ${batch})
  endforeach()
  execute_process(${cmds} RESULTS_VARIABLE rcs ERROR_VARIABLE err)
  message(STATUS "${name}: exits ${rcs}\n${err}")
  foreach(rc IN LISTS rcs)
    if(NOT rc STREQUAL "0")
      message(SEND_ERROR "${name}: a writer failed (exits ${rcs}):\n${err}")
      break()
    endif()
  endforeach()
  if(err MATCHES "locked|busy")
    message(SEND_ERROR "${name}: a writer met a locked database:\n${err}")
  endif()
  # The writers' time spans must overlap, or the round tested nothing.
  string(REGEX MATCHALL "from [0-9.]+ to [0-9.]+" spans "${err}")
  set(latest_start 0)
  set(earliest_end 999999999999999999)
  foreach(s IN LISTS spans)
    string(REGEX REPLACE "from ([0-9]+)\\.([0-9]+) to ([0-9]+)\\.([0-9]+)" "\\1\\2;\\3\\4" se "${s}")
    list(GET se 0 start)
    list(GET se 1 end)
    string(SUBSTRING "${start}" 4 -1 start) # microseconds, shortened to stay inside CMake's int64
    string(SUBSTRING "${end}" 4 -1 end)
    if(start GREATER latest_start)
      set(latest_start ${start})
    endif()
    if(end LESS earliest_end)
      set(earliest_end ${end})
    endif()
  endforeach()
  if(latest_start LESS earliest_end)
    message(STATUS "${name}: the writers overlapped")
  else()
    message(WARNING "${name}: the writers did not overlap (the machine ran them one after another); "
                    "the round proves less than it should")
  endif()
  foreach(w RANGE 1 ${WRITERS})
    execute_process(COMMAND "${WRITER}" count "${db}" "GPU-${name}-${w}"
                    RESULT_VARIABLE rc OUTPUT_VARIABLE counts ERROR_VARIABLE cerr
                    OUTPUT_STRIP_TRAILING_WHITESPACE)
    # measurements, finished runs, best rows (the writers spread their rows over 16 sizes)
    set(best ${count})
    if(best GREATER 16)
      set(best 16)
    endif()
    if(NOT rc EQUAL 0 OR NOT counts STREQUAL "${count} 1 ${best}")
      message(SEND_ERROR "${name}: writer ${w} has '${counts}' ${cerr}(expected '${count} 1 ${best}': "
                         "measurements, finished runs, best rows)")
    endif()
  endforeach()
endfunction()

round(fresh 3000 10)
round(existing 300 1)

if(EXISTS "${db}-wal")
  file(SIZE "${db}-wal" wal)
  message(STATUS "left: ${db}-wal of ${wal} bytes")
endif()
file(REMOVE_RECURSE "${WORK}")
