# Runs -DEXE= if it was built; otherwise prints why not and "skipped" (the test's
# SKIP_REGULAR_EXPRESSION). An exit code of 77 (no GPU) is a skip too; anything else but 0 fails.
if(NOT EXISTS "${EXE}")
  message("${EXE} was not built (${WHY}): skipped")
  return()
endif()
execute_process(COMMAND "${EXE}" RESULT_VARIABLE rc)
if(rc EQUAL 77)
  message("no GPU: skipped")
elseif(NOT rc EQUAL 0)
  message(FATAL_ERROR "${EXE} exited with ${rc}")
endif()
