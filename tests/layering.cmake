# Dependencies point down: the runtime library (runtime/, kernels/, db/) and the public headers
# (include/) never include a tuner/ header, so the installed library builds without the tuner.
# Run with -DSOURCE_DIR=<repository root>; fails naming each offending line.
file(GLOB_RECURSE files LIST_DIRECTORIES false
     "${SOURCE_DIR}/runtime/*" "${SOURCE_DIR}/kernels/*" "${SOURCE_DIR}/db/*" "${SOURCE_DIR}/include/*")
set(bad "")
foreach(f IN LISTS files)
  file(STRINGS "${f}" lines REGEX "^[ \t]*#[ \t]*include[ \t]*[\"<]tuner/")
  foreach(l IN LISTS lines)
    file(RELATIVE_PATH rel "${SOURCE_DIR}" "${f}")
    string(APPEND bad "\n  ${rel}: ${l}")
  endforeach()
endforeach()
list(LENGTH files n)
if(n EQUAL 0)
  message(FATAL_ERROR "no sources found under ${SOURCE_DIR}")
endif()
if(bad)
  message(FATAL_ERROR "the runtime includes the tuner:${bad}")
endif()
message(STATUS "${n} files under runtime/, kernels/, db/ and include/: none includes tuner/")
