# Installs the build tree to a scratch prefix and builds examples/sum against it as an outside
# project would (find_package(reduce_tune CONFIG REQUIRED)); the tests install_consumer_run and
# install_consumer_run_cuda then run the example and its CUDA-language twin (a .cu file compiled
# by nvcc at its default standard; built only where there is a CUDA compiler). Run with
# -DBUILD_DIR= -DSOURCE_DIR= -DWORK_DIR= -DGENERATOR= -DCXX= and optionally -DCUDA_ROOT= (the
# toolkit the example's cudaMalloc and, if it has one, nvcc come from).
foreach(v BUILD_DIR SOURCE_DIR WORK_DIR GENERATOR CXX)
  if(NOT ${v})
    message(FATAL_ERROR "test_install.cmake: -D${v}=... is required")
  endif()
endforeach()

function(step what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${what} failed (${rc}):\n${out}")
  endif()
  message(STATUS "${what}: ok")
endfunction()

file(REMOVE_RECURSE "${WORK_DIR}")
set(prefix "${WORK_DIR}/prefix")
step("cmake --install" ${CMAKE_COMMAND} --install "${BUILD_DIR}" --prefix "${prefix}")
set(cuda_hint)
if(CUDA_ROOT)
  set(cuda_hint "-DCUDAToolkit_ROOT=${CUDA_ROOT}")
  if(EXISTS "${CUDA_ROOT}/bin/nvcc")
    list(APPEND cuda_hint "-DCMAKE_CUDA_COMPILER=${CUDA_ROOT}/bin/nvcc" "-DCMAKE_CUDA_HOST_COMPILER=${CXX}")
  endif()
endif()
step("configure examples/sum" ${CMAKE_COMMAND} -S "${SOURCE_DIR}/examples/sum"
     -B "${WORK_DIR}/build" -G "${GENERATOR}" "-DCMAKE_CXX_COMPILER=${CXX}"
     -DCMAKE_BUILD_TYPE=Release "-DCMAKE_PREFIX_PATH=${prefix}"
     -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF -DCMAKE_EXPORT_COMPILE_COMMANDS=ON ${cuda_hint})
# The package must come from the install tree, not from anywhere else on the machine.
file(STRINGS "${WORK_DIR}/build/CMakeCache.txt" found REGEX "^reduce_tune_DIR:")
string(FIND "${found}" "${prefix}/" at)
if(NOT at GREATER -1)
  message(FATAL_ERROR "find_package(reduce_tune) did not use the install tree ${prefix}: ${found}")
endif()
step("build examples/sum" ${CMAKE_COMMAND} --build "${WORK_DIR}/build")

# The twin must be compiled at nvcc's default standard: no -std flag from the package (it asks
# C++17 of C++ sources only) nor from the example.
if(EXISTS "${WORK_DIR}/build/sum_cuda")
  file(READ "${WORK_DIR}/build/compile_commands.json" commands)
  string(REGEX MATCH "\"command\": \"[^\"]*sum_cuda\\.cu[^\"]*\"" twin "${commands}")
  if(NOT twin)
    message(FATAL_ERROR "no compile command for sum_cuda.cu in compile_commands.json")
  elseif(twin MATCHES "-std=")
    message(FATAL_ERROR "sum_cuda.cu was not compiled at nvcc's default standard: ${twin}")
  endif()
  message(STATUS "examples/sum/sum_cuda.cu: built by nvcc at its default standard")
else()
  message(STATUS "examples/sum/sum_cuda.cu: not built (no CUDA compiler)")
endif()
