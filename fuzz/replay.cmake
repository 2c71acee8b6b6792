# The fuzz targets in the ordinary build and test suite (included from the top CMakeLists.txt
# after tools/server): each target's LLVMFuzzerTestOneInput with replay_main.cpp (no libFuzzer,
# no instrumentation) replays its seeds (corpus/T) and the findings' inputs (regressions/T),
# then runs random mutations of them for SD_FUZZ_REPLAY_SECONDS. The coverage-guided runs are
# scripts/fuzz.sh's (clang, fuzz/CMakeLists.txt).
set(SD_FUZZ_REPLAY_SECONDS 10 CACHE STRING "Seconds of random mutations per fuzz target in ctest")
# A fixed seed: the suite's verdict must not depend on the draw (fuzz_replay_T --seed N by hand).
set(SD_FUZZ_REPLAY_SEED 1 CACHE STRING "Seed of the fuzz targets' random mutations in ctest")
set(SD_FUZZ_DIR ${PROJECT_SOURCE_DIR}/fuzz)
file(GLOB SD_FUZZ_TARGET_SOURCES CONFIGURE_DEPENDS ${SD_FUZZ_DIR}/fuzz_*.cpp)
foreach(src ${SD_FUZZ_TARGET_SOURCES})
    get_filename_component(name ${src} NAME_WE)
    string(REGEX REPLACE "^fuzz_" "" name ${name})
    set(target fuzz_replay_${name})
    add_executable(${target} ${SD_FUZZ_DIR}/fuzz_${name}.cpp ${SD_FUZZ_DIR}/replay_main.cpp)
    target_include_directories(${target} PRIVATE ${SD_FUZZ_DIR})
    set_target_properties(${target} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/fuzz)
    target_link_libraries(${target} PRIVATE stable-diffusion)
    if(name MATCHES "^(server_request|redis_records|http_connection)$")
        target_link_libraries(${target} PRIVATE sd-server-core)
    endif()
    set(inputs ${SD_FUZZ_DIR}/corpus/${name})
    if(EXISTS ${SD_FUZZ_DIR}/regressions/${name})
        list(APPEND inputs ${SD_FUZZ_DIR}/regressions/${name})
    endif()
    add_test(NAME fuzz_${name} COMMAND ${target} --seconds ${SD_FUZZ_REPLAY_SECONDS}
                                           --seed ${SD_FUZZ_REPLAY_SEED} ${inputs})
    set_tests_properties(fuzz_${name} PROPERTIES TIMEOUT 300 LABELS fuzz)
endforeach()
