# Vulkan compute (src/gpu/vulkan), included from sources.cmake when SD_VULKAN is ON: every
# src/gpu/vulkan/shaders/NAME.comp (with the .glsl files it includes) compiled by glslc to SPIR-V at build time and embedded by
# the assembler's .incbin as sd_spirv_NAME .. sd_spirv_NAME_end (vulkan_shaders.cpp).
set(SD_SHADER_DIR ${PROJECT_SOURCE_DIR}/src/gpu/vulkan/shaders)
set(SD_SPIRV_DIR ${CMAKE_CURRENT_BINARY_DIR}/generated/spirv)
file(GLOB SD_SHADER_SOURCES CONFIGURE_DEPENDS ${SD_SHADER_DIR}/*.comp)
file(MAKE_DIRECTORY ${SD_SPIRV_DIR})
set(SD_SPIRV_FILES "")
set(SD_SPIRV_INCBINS "")
# Compiles shaders/SOURCE.comp as NAME with the extra glslc flags.
function(sd_add_shader source name)
    set(spv ${SD_SPIRV_DIR}/${name}.spv)
    # The depfile lists the .glsl files the shader includes.
    add_custom_command(OUTPUT ${spv}
                       COMMAND ${SD_GLSLC} --target-env=vulkan1.1 -O -Werror ${ARGN} -MD -MF
                               ${spv}.d -o ${spv} ${source}
                       DEPENDS ${source}
                       DEPFILE ${spv}.d
                       COMMENT "glslc ${name}"
                       VERBATIM)
    set(SD_SPIRV_FILES ${SD_SPIRV_FILES} ${spv} PARENT_SCOPE)
    set(SD_SPIRV_INCBINS
        "${SD_SPIRV_INCBINS}    .balign 16\n"
        "    .global sd_spirv_${name}\n    .hidden sd_spirv_${name}\n"
        "    .global sd_spirv_${name}_end\n    .hidden sd_spirv_${name}_end\n"
        "sd_spirv_${name}:\n    .incbin \"${spv}\"\n"
        "sd_spirv_${name}_end:\n" PARENT_SCOPE)
endfunction()
foreach(shader ${SD_SHADER_SOURCES})
    get_filename_component(name ${shader} NAME_WE)
    sd_add_shader(${shader} ${name})
    # The GEMM and attention shaders also as NAME_lanes with SD_LANES, for CPU-class devices
    # (gemm_common.glsl, attention_common.glsl).
    if(name MATCHES "^(linear|conv2d|attention)_")
        sd_add_shader(${shader} ${name}_lanes -DSD_LANES)
    endif()
endforeach()
string(REPLACE ";" "" SD_SPIRV_INCBINS "${SD_SPIRV_INCBINS}")
configure_file(${PROJECT_SOURCE_DIR}/cmake/vulkan_shaders.S.in
               ${CMAKE_CURRENT_BINARY_DIR}/generated/vulkan_shaders.S @ONLY)
set_source_files_properties(${CMAKE_CURRENT_BINARY_DIR}/generated/vulkan_shaders.S
                            PROPERTIES OBJECT_DEPENDS "${SD_SPIRV_FILES}")
add_custom_target(sd-vulkan-shaders DEPENDS ${SD_SPIRV_FILES})
add_dependencies(stable-diffusion sd-vulkan-shaders)
target_sources(stable-diffusion PRIVATE ${CMAKE_CURRENT_BINARY_DIR}/generated/vulkan_shaders.S)
target_include_directories(stable-diffusion PRIVATE ${SD_VULKAN_INCLUDE_DIR})
target_link_libraries(stable-diffusion PRIVATE ${CMAKE_DL_LIBS})
