# `reduce-tune tune --reduction FILE` and `query --op user:<hash>`: what is refused before any GPU is
# touched (exit 2, the message naming the problem), with the store left as it was. No GPU needed.
# Run as: cmake -DCLI=path/to/reduce-tune -DWORK=dir -P cli_tune_reduction.cmake
file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${WORK}")
include(${CMAKE_CURRENT_LIST_DIR}/cli_common.cmake)

# A store with something in it (the published figures), to check that nothing refused touches it.
set(db "${WORK}/store.db")
run(out 0 import-reference --db ${db})
file(SHA256 "${db}" before)

file(WRITE "${WORK}/sumsq.txt" "# a sum of squares of float32\nmap = x * x\ninputs = float32\n")
file(WRITE "${WORK}/malformed.txt" "map = x * x\nmapp = x\n")
file(WRITE "${WORK}/ints.txt" "map = x\ninputs = int64\n")
file(WRITE "${WORK}/unended.txt" "preamble <<END\nstruct s { float a; };\n")

run(out 2 tune --db ${db} --reduction ${WORK}/missing.txt)
expect("${out}" "--reduction: cannot read .*missing.txt")
run(out 2 tune --db ${db} --reduction ${WORK}/malformed.txt)
expect("${out}" "malformed.txt: .*line 2: unknown key 'mapp'")
run(out 2 tune --db ${db} --reduction ${WORK}/unended.txt)
expect("${out}" "unended.txt: .*line 1: .*no line 'END'")
run(out 2 tune --db ${db} --reduction ${WORK}/sumsq.txt --ops max)
expect("${out}" "--reduction tunes the reduction: it takes no --ops")
run(out 2 tune --db ${db} --reduction ${WORK}/sumsq.txt --dtypes float32,int32)
expect("${out}" "sumsq.txt \\(user:[0-9a-f]+\\): .*int32")
run(out 2 tune --db ${db} --reduction ${WORK}/ints.txt)
expect("${out}" "ints.txt takes neither int32 nor float32: give --dtypes")
run(out 2 tune --db ${db} --reduction ${WORK}/sumsq.txt --dtypes float32 --material 000)
expect("${out}" "not a --reduction")
run(out 2 tune --db ${db} --reduction ${WORK}/sumsq.txt --recorded)
expect("${out}" "--recorded .*--reduction")

# query: a user reduction by name or by file; a malformed name is no op.
run(out 2 query --db ${db} --op user:12345 --n 2^20)
expect("${out}" "unknown op 'user:12345'")
run(out 1 query --db ${db} --op user:0123456789abcdef --n 2^20)
expect("${out}" "no tuning stored for float32 user:0123456789abcdef n=2\\^20")
run(out 1 query --db ${db} --reduction ${WORK}/sumsq.txt --n 2^20)
expect("${out}" "no tuning stored for float32 user:[0-9a-f]+ n=2\\^20")
run(out 2 query --db ${db} --reduction ${WORK}/sumsq.txt --op sum --n 2^20)
expect("${out}" "give --op or --reduction, not both")

file(SHA256 "${db}" after)
if(NOT before STREQUAL after)
  message(SEND_ERROR "a refused command changed the store ${db}")
endif()

# A store holding a user reduction's rows and description, as `tune --reduction` writes them (made
# with Python's sqlite3, no GPU): query and coverage show it, and the lookup is its own.
find_program(PYTHON3 python3)
if(NOT PYTHON3)
  message(STATUS "skipped: query and coverage of a stored user reduction (no python3)")
  return()
endif()
execute_process(COMMAND ${CLI} reduction ${WORK}/sumsq.txt --dtype float32 OUTPUT_VARIABLE named)
string(REGEX MATCH "^user:[0-9a-f]+" name "${named}")
set(kept "${WORK}/kept.db")
run(out 0 import-reference --db ${kept})
file(WRITE "${WORK}/fill.py" "
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
db.execute(\"INSERT INTO devices VALUES ('GPU-x', 'NVIDIA H100 80GB HBM3', 9, 0, 132, 52428800, 85000000000, \"
           \"2619000, 5120, 3352, 13000, 'host', '2026-01-01', '2026-01-01')\")
db.execute(\"INSERT INTO runs (device_uuid, tool_version, nvrtc_version, options, timing_method, started, status) \"
           \"VALUES ('GPU-x', 't', '13.0', '', '', '2026-01-01', 'done')\")
for key, us in (('vectorized.b256.u4.v4.g0.shfl.lastblock', 9.0), ('vectorized.b512.u2.v4.g0.shfl.lastblock', 8.0)):
    db.execute('INSERT INTO measurements (run_id, device_uuid, key, variant, block, unroll, vec, grid, tail, finish, '
               'dtype, op, n, median_us, min_us, max_us, host_us, reps, gbps, pct_peak, valid, error, expected, '
               'observed, seed, cold, created, problem, count) VALUES (1, ?, ?, ?, 256, 4, 4, 0, ?, ?, ?, ?, '
               '1048576, ?, ?, ?, 0, 3, 1, 1, 1, ?, ?, ?, 1, 1, ?, ?, 1)',
               ('GPU-x', key, 'vectorized', 'shfl', 'lastblock', 'float32', sys.argv[2], us, us, us, '',
                'not checked', '1', '2026-01-01', 'array'))
db.execute('INSERT INTO best SELECT device_uuid, dtype, op, problem, count, n, id FROM measurements WHERE '
           'op = ? ORDER BY median_us LIMIT 1', (sys.argv[2],))
db.execute('INSERT INTO reductions VALUES (?, ?, ?, ?)', (sys.argv[2], 'canonical', open(sys.argv[3]).read(), '2026'))
db.commit()
")
execute_process(COMMAND ${PYTHON3} ${WORK}/fill.py ${kept} ${name} ${WORK}/sumsq.txt RESULT_VARIABLE rc ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "fill.py: ${err}")
endif()
run(out 0 query --db ${kept} --op ${name} --n 2^20)
expect("${out}" "float32 ${name} n=2\\^20 -> vectorized.b512.u2.v4.g0.shfl.lastblock .*tuned at this shape")
run(out 0 query --db ${kept} --lookup --uuid GPU-x --op ${name} --n 2^20)
expect("${out}" "-> vectorized.b512.u2.v4.g0.shfl.lastblock  exact .*tuned for ${name}")
run(out 0 query --db ${kept} --lookup --uuid GPU-x --reduction ${WORK}/sumsq.txt --n 2^24)
expect("${out}" "nearest_size .*tuned for ${name}")
run(out 0 query --db ${kept} --lookup --uuid GPU-x --n 2^20)
# sum's lookup never takes the reduction's rows (it has none of its own on GPU-x)
if("${out}" MATCHES "exact|user:")
  message(SEND_ERROR "sum's lookup took a user reduction's rows:\n${out}")
endif()
run(out 0 coverage --db ${kept} --uuid GPU-x)
expect("${out}" "1 user reduction .*\n  ${name} array +float32 +exact 1/10, nearest_size 9/10")
