# The CLI given database files it must refuse: garbage, a foreign SQLite database, a reduce-tune
# database from a newer schema, one with an impossible schema version, a corrupt one, an
# unreadable file, a directory, a path under a plain file. For each, `reduce-tune query` must exit
# 1 (a runtime error) with a one-line message that names the file and the problem, and leave the
# file byte for byte as it was (SHA-256 before and after) with no file added beside it.
# Run as: cmake -DCLI=path/to/reduce-tune -DWORK=scratch/dir -P cli_db_errors.cmake
# Needs python3 (or the sqlite3 shell) to write the SQLite files; says so and skips those without.
if(NOT WORK)
  set(WORK "${CMAKE_CURRENT_BINARY_DIR}/cli_db_errors")
endif()
file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${WORK}")

find_program(PYTHON3 NAMES python3)
find_program(SQLITE3_SHELL NAMES sqlite3)
# Runs SQL statements on a database file as a foreign tool would.
function(run_sql db sql)
  if(PYTHON3)
    execute_process(COMMAND "${PYTHON3}" -c
      "import sqlite3, sys\nc = sqlite3.connect(sys.argv[1], isolation_level=None)\nc.executescript(sys.argv[2])\nc.close()"
      "${db}" "${sql}" RESULT_VARIABLE rc ERROR_VARIABLE err)
  else()
    execute_process(COMMAND "${SQLITE3_SHELL}" "${db}" "${sql}" RESULT_VARIABLE rc ERROR_VARIABLE err)
  endif()
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "could not run '${sql}' on ${db}: ${err}")
  endif()
endfunction()

# Runs `reduce-tune query --db PATH --n 2^20` (with PREFIX before it, e.g. to drop privileges)
# and checks: exit 1, one line on stderr naming PATH and matching PATTERN, nothing on stdout, the
# file unchanged and nothing new in its directory.
function(expect_refused what path pattern)
  cmake_parse_arguments(A "" "" "PREFIX" ${ARGN})
  get_filename_component(dir "${path}" DIRECTORY)
  file(GLOB before_files LIST_DIRECTORIES true "${dir}/*")
  set(before_sum "")
  if(EXISTS "${path}" AND NOT IS_DIRECTORY "${path}")
    file(SHA256 "${path}" before_sum)
  endif()
  execute_process(COMMAND ${A_PREFIX} "${CLI}" query --db "${path}" --n 2^20
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  string(REGEX REPLACE "\n$" "" line "${err}")
  string(FIND "${line}" "${path}" names_file)
  set(problems "")
  if(NOT rc STREQUAL "1")
    list(APPEND problems "exit ${rc}, expected 1")
  endif()
  if(line MATCHES "\n" OR line STREQUAL "")
    list(APPEND problems "the message is not one line")
  endif()
  if(names_file EQUAL -1)
    list(APPEND problems "the message does not name ${path}")
  endif()
  if(NOT line MATCHES "${pattern}")
    list(APPEND problems "the message does not match '${pattern}'")
  endif()
  if(NOT out STREQUAL "")
    list(APPEND problems "it printed on stdout")
  endif()
  if(before_sum)
    file(SHA256 "${path}" after_sum)
    if(NOT after_sum STREQUAL before_sum)
      list(APPEND problems "the file was modified")
    endif()
  endif()
  file(GLOB after_files LIST_DIRECTORIES true "${dir}/*")
  if(NOT after_files STREQUAL before_files)
    list(APPEND problems "files beside it changed: before '${before_files}', after '${after_files}'")
  endif()
  if(problems)
    list(JOIN problems "; " problems)
    message(SEND_ERROR "${what}: ${problems}\n  stderr: ${err}  stdout: ${out}")
    set_property(GLOBAL APPEND PROPERTY rt_failed "${what}")
  else()
    message(STATUS "ok: ${what}: ${line}")
  endif()
endfunction()

# Each case in a directory of its own, so that "nothing new beside it" is exact.
function(case_dir name out)
  file(MAKE_DIRECTORY "${WORK}/${name}")
  set(${out} "${WORK}/${name}" PARENT_SCOPE)
endfunction()

# A store with no tuning: the harness works (exit 1, "no tuning stored"), and it is the base of
# the newer-schema and corrupt cases.
case_dir(base d)
execute_process(COMMAND "${CLI}" query --db "${d}/store.db" --n 2^20 RESULT_VARIABLE rc ERROR_VARIABLE err)
if(NOT rc EQUAL 1 OR NOT err MATCHES "no tuning stored" OR NOT EXISTS "${d}/store.db")
  message(FATAL_ERROR "query on a new store: exit ${rc}, ${err} (expected 1, 'no tuning stored', the file created)")
endif()

case_dir(garbage d)
string(REPEAT "this is not a database, just text\n" 200 junk)
file(WRITE "${d}/garbage.db" "${junk}")
expect_refused("garbage file" "${d}/garbage.db" "not a (SQLite )?database")

if(PYTHON3 OR SQLITE3_SHELL)
  case_dir(foreign d)
  run_sql("${d}/foreign.db" "CREATE TABLE notes (id INTEGER PRIMARY KEY, text TEXT); INSERT INTO notes (text) VALUES ('mine');")
  expect_refused("foreign SQLite database" "${d}/foreign.db" "foreign database")

  case_dir(foreign_versioned d)
  run_sql("${d}/foreign.db" "CREATE TABLE t (x); PRAGMA user_version = 1;")
  expect_refused("foreign SQLite database with user_version 1" "${d}/foreign.db" "foreign database")

  case_dir(newer d)
  file(COPY_FILE "${WORK}/base/store.db" "${d}/store.db")
  run_sql("${d}/store.db" "PRAGMA user_version = 1000;")
  expect_refused("newer schema version" "${d}/store.db" "schema version 1000, newer than this build")

  # No build writes a negative version: refused, never used as a migration index.
  case_dir(negative d)
  file(COPY_FILE "${WORK}/base/store.db" "${d}/store.db")
  run_sql("${d}/store.db" "PRAGMA user_version = -1;")
  expect_refused("schema version -1" "${d}/store.db" "foreign|version -1")

  if(PYTHON3)
    # Every page after the first overwritten: the header and the schema's first page are intact,
    # the tables are not.
    case_dir(corrupt d)
    file(COPY_FILE "${WORK}/base/store.db" "${d}/store.db")
    execute_process(COMMAND "${PYTHON3}" -c
      "import os, sys\np = sys.argv[1]\nsize = os.path.getsize(p)\nf = open(p, 'r+b')\nf.seek(4096)\nf.write(bytes([0xa5]) * (size - 4096))\nf.close()"
      "${d}/store.db" RESULT_VARIABLE rc)
    expect_refused("corrupt database" "${d}/store.db" "malformed|corrupt")
  endif()
else()
  message(STATUS "skipped: foreign, newer-schema and corrupt databases (neither python3 nor sqlite3 found)")
endif()

case_dir(directory d)
file(MAKE_DIRECTORY "${d}/store.db")
expect_refused("a directory" "${d}/store.db" "unable to open|directory")

case_dir(under_file d)
file(WRITE "${d}/plain" "a plain file\n")
expect_refused("a path under a plain file" "${d}/plain/store.db" "directory|unable to open")

# Unreadable: chmod 000 stops everyone but root. As root (CI), run the CLI as nobody instead
# where setpriv exists and nobody can reach the CLI and the file's directory; else skip, saying so.
case_dir(unreadable d)
file(COPY_FILE "${WORK}/base/store.db" "${d}/store.db")
execute_process(COMMAND chmod 000 "${d}/store.db")
execute_process(COMMAND id -u OUTPUT_VARIABLE uid OUTPUT_STRIP_TRAILING_WHITESPACE)
set(prefix "")
set(run_unreadable TRUE)
if(uid STREQUAL "0")
  set(run_unreadable FALSE)
  find_program(SETPRIV NAMES setpriv)
  if(SETPRIV)
    set(prefix "${SETPRIV}" --reuid=65534 --regid=65534 --clear-groups)
    file(CHMOD "${WORK}" "${d}" PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE GROUP_READ
         GROUP_EXECUTE WORLD_READ WORLD_EXECUTE)
    execute_process(COMMAND ${prefix} "${CLI}" --help RESULT_VARIABLE rc OUTPUT_QUIET ERROR_QUIET)
    execute_process(COMMAND ${prefix} test -x "${d}" RESULT_VARIABLE rc_dir)
    if(rc EQUAL 0 AND rc_dir EQUAL 0)
      set(run_unreadable TRUE)
    endif()
  endif()
endif()
if(run_unreadable)
  expect_refused("unreadable file (mode 000)" "${d}/store.db" "unable to open|ermission" PREFIX ${prefix})
else()
  message(STATUS "skipped: unreadable file: running as root, where mode 000 still reads, and the "
                 "CLI cannot be run as nobody here")
endif()
file(CHMOD "${d}/store.db" PERMISSIONS OWNER_READ OWNER_WRITE)

get_property(failed GLOBAL PROPERTY rt_failed)
if(failed)
  message(STATUS "the files of the failed cases are kept in ${WORK}")
else()
  file(REMOVE_RECURSE "${WORK}")
endif()
