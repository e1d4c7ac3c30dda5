# The committed table of built-in defaults (runtime/defaults_table.inc) is what
# scripts/derive-defaults.py makes of the shipped tuning and the exhaustive sweeps of data/replay/: rerun it and compare. Without a python3
# it prints "skipped" (the test's SKIP_REGULAR_EXPRESSION).
find_program(PYTHON3 NAMES python3)
if(NOT PYTHON3)
  message("no python3: skipped")
  return()
endif()
execute_process(COMMAND "${PYTHON3}" "${SOURCE_DIR}/scripts/derive-defaults.py"
                        --check "${SOURCE_DIR}/runtime/defaults_table.inc"
                RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "runtime/defaults_table.inc is not what scripts/derive-defaults.py derives "
                      "from the shipped tuning and data/replay/'s exhaustive sweeps (exit ${rc}); regenerate it: "
                      "python3 scripts/derive-defaults.py --out runtime/defaults_table.inc")
endif()
