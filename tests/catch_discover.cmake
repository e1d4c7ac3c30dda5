# Registers every Catch2 test case of TARGET as a CTest test, at test time (like Catch2 v3's
# catch_discover_tests, which Debian's v2 package lacks a working copy of for our layout).
function(rt_discover_catch_tests target)
  set(script "${CMAKE_CURRENT_BINARY_DIR}/${target}_tests.cmake")
  add_custom_command(TARGET ${target} POST_BUILD
    COMMAND ${CMAKE_COMMAND} -DEXE=$<TARGET_FILE:${target}> -DOUT=${script}
            -P ${CMAKE_CURRENT_FUNCTION_LIST_DIR}/catch_list.cmake
    VERBATIM)
  set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES "${script}")
endfunction()
