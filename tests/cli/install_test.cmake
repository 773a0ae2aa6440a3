# Installs tierscope into a fresh prefix and runs it from there, away from the build and
# source trees: bench with a trace, then analyze that trace. Fails on any non-zero status
# or missing output. Run by ctest (tests/CMakeLists.txt).
file(REMOVE_RECURSE "${PREFIX}")
execute_process(COMMAND ${CMAKE_COMMAND} --install "${BUILD_DIR}" --prefix "${PREFIX}"
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "cmake --install failed (${rc}): ${out}${err}")
endif()
set(bin "${PREFIX}/bin/tierscope")
if(NOT EXISTS "${bin}")
  message(FATAL_ERROR "no ${bin} after install")
endif()
set(work "${PREFIX}/work")
file(MAKE_DIRECTORY "${work}")
# A cache of its own: the built-in model is written on first use.
set(ENV{TIERSCOPE_CACHE_DIR} "${work}/cache")
execute_process(COMMAND "${bin}" bench --batch-size 2 --seq-len 8 --warmup 0 --iterations 1
                        --profile --trace "${work}/t.json.gz"
                WORKING_DIRECTORY "${work}" RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0 OR NOT out MATCHES "RESULT_JSON=")
  message(FATAL_ERROR "installed bench failed (${rc}): ${out}${err}")
endif()
execute_process(COMMAND "${bin}" analyze "${work}/t.json.gz"
                WORKING_DIRECTORY "${work}" RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0 OR NOT out MATCHES "batched_bert_forward")
  message(FATAL_ERROR "installed analyze failed (${rc}): ${out}${err}")
endif()
file(GLOB plugins "${BUILD_DIR}/libtierscope_*.so")
if(plugins)
  file(GLOB installed "${PREFIX}/lib/tierscope/libtierscope_*.so")
  if(NOT installed)
    message(FATAL_ERROR "the GPU plugin was built but not installed under ${PREFIX}/lib/tierscope")
  endif()
  # From the prefix, --device cuda finds and loads the installed plugin: it runs, or it
  # says only that there is no device.
  execute_process(COMMAND "${bin}" device --device cuda RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0 AND NOT err MATCHES "no (cuda|musa) device")
    message(FATAL_ERROR "the installed tierscope could not use its plugin (${rc}): ${err}")
  endif()
endif()
message(STATUS "installed tierscope runs from ${PREFIX}")
