# `reduce-tune replay` over a recorded exhaustive store (gzip-compressed): exhaustive at 100% ends
# at every point's best with every measurement; guided prints its figures in the stated form; bad
# input exits 2. Run as: cmake -DCLI=reduce-tune -DSTORE=store.db.gz -P cli_replay.cmake
function(expect code pattern)
  execute_process(COMMAND ${CLI} replay ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 300)
  if(NOT rc STREQUAL "${code}" OR NOT "${out}${err}" MATCHES "${pattern}")
    message(SEND_ERROR "reduce-tune replay ${ARGN}: exit ${rc} (expected ${code}):\n${out}${err}\n(expected '${pattern}')")
  endif()
endfunction()
expect(0 "replay: median 1\\.00, worst 1\\.00 of the exhaustive best with 100\\.0% of the measurements\n$"
       --db ${STORE} --search exhaustive --budget 100% --baseline none)
expect(0 "random at the same budget: median [01]\\.[0-9]+, worst [01]\\.[0-9]+ .*\nreplay: median [01]\\.[0-9]+, worst [01]\\.[0-9]+ of the exhaustive best with [0-9.]+% of the measurements\n$"
       --db ${STORE} --search guided --budget 5%)
# --worst N: N points, worst first (their ratios do not rise), before the table.
expect(0 "the 3 worst points of guided:\n[^\n]+\(0\.[0-9]+\)\n[^\n]+\n[^\n]+\n\n\\| GPU"
       --db ${STORE} --search guided --budget 5% --worst 3 --baseline none)
expect(2 "--budget '0': expected" --db ${STORE} --budget 0)
expect(2 "unknown strategy 'annealing'" --db ${STORE} --search annealing)
expect(2 "replay needs --db" --search guided)
# --trace NAME: what the search measured at the points so named, in order, each with its time, the
# improvements starred; the first measurement is always one.
expect(0 "float32 sum rows 32 x 2048: [0-9]+ of [0-9]+[^\n]*\n +1 rows_[a-z_]+\\.[^ ]+ +[0-9.]+ us  \\*\n +2 "
       --db ${STORE} --search guided --budget 5% --baseline none --trace "float32 sum rows 32x2048")
expect(0 "no point named 'float32 sum rows 3x5'" --db ${STORE} --baseline none --trace "float32 sum rows 3x5")
# --every-twin: the search is offered every evict-first twin, as on the GPU, and the replay says
# how often it asked for one the store lacks (shown in the trace as not recorded).
expect(0 "twins the store lacks: [0-9]+ measurements asked for one, at [0-9]+ of [0-9]+ points\nreplay: median [01]\\.[0-9]+, worst [01]\\.[0-9]+ "
       --db ${STORE} --search guided --budget 5% --baseline none --every-twin)
# A store of every twin (`tune --every-twin`): nothing the search asks for is missing from it, and
# the exhaustive strategy measures every configuration it holds (100 % of them), where a search's
# share is of what the GPU's exhaustive default sweep measures.
if(COMPLETE)
  expect(0 "twins the store lacks: 0 measurements asked for one, at 0 of [0-9]+ points\nreplay: median "
         --db ${COMPLETE} --search guided --budget 5% --baseline none --every-twin)
  expect(0 "replay: median 1\\.00, worst 1\\.00 of the exhaustive best with 100\\.0% of the measurements\n$"
         --db ${COMPLETE} --search exhaustive --budget 100% --baseline none)
endif()
