# The library target: every .cpp under src/. Kernels for one instruction set live in files
# named *_avx2.cpp / *_avx512.cpp / *_avx512_bf16.cpp; they get that set's compile flags and
# are dispatched at run time from the CPU's features, so one binary runs on any x86-64 machine.
file(GLOB_RECURSE SD_SOURCES CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/src/*.cpp)

# Vulkan compute (src/gpu/vulkan): on by default where the Vulkan headers and glslc are found
# (Debian: libvulkan-dev, glslc). The loader is opened at run time, never linked.
find_path(SD_VULKAN_INCLUDE_DIR vulkan/vulkan.h)
find_program(SD_GLSLC glslc)
if(SD_VULKAN_INCLUDE_DIR AND SD_GLSLC)
    set(SD_VULKAN_DEFAULT ON)
else()
    set(SD_VULKAN_DEFAULT OFF)
endif()
option(SD_VULKAN "Vulkan compute kernels (needs the Vulkan headers and glslc)" ${SD_VULKAN_DEFAULT})
if(SD_VULKAN AND NOT (SD_VULKAN_INCLUDE_DIR AND SD_GLSLC))
    message(FATAL_ERROR "SD_VULKAN=ON needs vulkan/vulkan.h and glslc (Debian: libvulkan-dev glslc)")
endif()
if(SD_VULKAN)
    list(FILTER SD_SOURCES EXCLUDE REGEX "/src/gpu/no_vulkan\\.cpp$")
else()
    list(FILTER SD_SOURCES EXCLUDE REGEX "/src/gpu/vulkan/")
endif()

set(SD_AVX2_FLAGS -mavx2 -mfma -mf16c)
# GCC 12 warns falsely about _mm512_undefined_* inside its own intrinsics headers.
set(SD_AVX512_FLAGS -mavx512f -mavx512bw -mavx512vl -mavx512dq -mfma -mf16c -mavx2 -Wno-maybe-uninitialized)
set(SD_AVX512_BF16_FLAGS ${SD_AVX512_FLAGS} -mavx512bf16)

foreach(src ${SD_SOURCES})
    set(flags "")
    if(src MATCHES "_avx512_bf16\\.cpp$")
        set(flags ${SD_AVX512_BF16_FLAGS})
    elseif(src MATCHES "_avx512\\.cpp$")
        set(flags ${SD_AVX512_FLAGS})
    elseif(src MATCHES "_avx2\\.cpp$")
        set(flags ${SD_AVX2_FLAGS})
    endif()
    if(NOT "${flags}" STREQUAL "")
        if(SD_X86_KERNELS)
            set_source_files_properties(${src} PROPERTIES COMPILE_OPTIONS "${flags}")
        else()
            list(REMOVE_ITEM SD_SOURCES ${src})
        endif()
    endif()
endforeach()

if(SD_BUILD_SHARED)
    add_library(stable-diffusion SHARED ${SD_SOURCES})
    set_target_properties(stable-diffusion PROPERTIES CXX_VISIBILITY_PRESET default)
else()
    add_library(stable-diffusion STATIC ${SD_SOURCES})
endif()
target_include_directories(stable-diffusion PUBLIC ${PROJECT_SOURCE_DIR}/src
                                                   ${PROJECT_SOURCE_DIR}/include)
find_package(nlohmann_json 3 REQUIRED)
target_link_libraries(stable-diffusion PUBLIC Threads::Threads PRIVATE nlohmann_json::nlohmann_json)
target_compile_options(stable-diffusion PRIVATE $<$<CONFIG:Release>:-O3>)
if(SD_X86_KERNELS)
    target_compile_definitions(stable-diffusion PUBLIC SD_X86_KERNELS=1)
endif()

# Image files (src/image) and the version that sd_version() / sd_commit() report (src/api).
find_package(PNG REQUIRED)
find_package(JPEG REQUIRED)
find_package(ZLIB REQUIRED)
find_package(PkgConfig REQUIRED)
pkg_check_modules(SD_WEBP REQUIRED IMPORTED_TARGET libwebp libwebpmux)
pkg_check_modules(SD_VPX REQUIRED IMPORTED_TARGET vpx)  # VP8 for .webm videos
target_link_libraries(stable-diffusion PRIVATE PNG::PNG JPEG::JPEG ZLIB::ZLIB PkgConfig::SD_WEBP
                                               PkgConfig::SD_VPX)

execute_process(COMMAND git rev-parse --short=8 HEAD
                WORKING_DIRECTORY ${PROJECT_SOURCE_DIR}
                OUTPUT_VARIABLE SD_GIT_COMMIT OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
if(NOT SD_GIT_COMMIT)
    set(SD_GIT_COMMIT unknown)
endif()
set_source_files_properties(${PROJECT_SOURCE_DIR}/src/api/system.cpp PROPERTIES COMPILE_DEFINITIONS
    "SD_GIT_COMMIT=\"${SD_GIT_COMMIT}\";SD_VERSION_STRING=\"${PROJECT_VERSION}\"")

# The built-in tokenizer vocabularies (data/vocabularies, see its README): each .gz embedded by
# the assembler's .incbin, bounded by sd_vocab_NAME / sd_vocab_NAME_end (hidden symbols).
enable_language(ASM)
set(SD_VOCAB_DIR ${PROJECT_SOURCE_DIR}/data/vocabularies)
set(SD_VOCAB_FILES clip_vocab.json clip_merges.txt qwen2_vocab.json qwen2_merges.txt)
set(SD_VOCAB_INCBINS "")
set(SD_VOCAB_DEPENDS "")
foreach(file ${SD_VOCAB_FILES})
    string(REGEX REPLACE "[^A-Za-z0-9]" "_" symbol ${file})
    string(APPEND SD_VOCAB_INCBINS
           "    .global sd_vocab_${symbol}\n    .hidden sd_vocab_${symbol}\n"
           "    .global sd_vocab_${symbol}_end\n    .hidden sd_vocab_${symbol}_end\n"
           "sd_vocab_${symbol}:\n    .incbin \"${SD_VOCAB_DIR}/${file}.gz\"\n"
           "sd_vocab_${symbol}_end:\n")
    list(APPEND SD_VOCAB_DEPENDS ${SD_VOCAB_DIR}/${file}.gz)
endforeach()
configure_file(${PROJECT_SOURCE_DIR}/cmake/builtin_vocabularies.S.in
               ${CMAKE_CURRENT_BINARY_DIR}/generated/builtin_vocabularies.S @ONLY)
set_source_files_properties(${CMAKE_CURRENT_BINARY_DIR}/generated/builtin_vocabularies.S
                            PROPERTIES OBJECT_DEPENDS "${SD_VOCAB_DEPENDS}")
target_sources(stable-diffusion PRIVATE ${CMAKE_CURRENT_BINARY_DIR}/generated/builtin_vocabularies.S)

if(SD_VULKAN)
    include(${CMAKE_CURRENT_LIST_DIR}/vulkan_shaders.cmake)
endif()
