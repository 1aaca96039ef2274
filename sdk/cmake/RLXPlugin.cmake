# rlx_add_plugin(): builds an rlx plugin and writes its manifest, the way the registry expects
# to find them (docs/architecture.md section 4): librlx_<kind>_<name>.so beside <name>.toml.
#
#   rlx_add_plugin(NAME <name> KIND target|importer SOURCES <src>...
#                  [VERSION <v>] [DESCRIPTION <text>] [REQUIRES <system library>...]
#                  [EXTENSIONS <.ext>...] [MAGIC <leading bytes>...] [FOLDERS <marker file>...]
#                  [COMPONENT <install component>])
#
# VERSION defaults to the project's version, COMPONENT to "runtime". REQUIRES names system
# libraries (libcuda.so.1) the registry probes before loading; EXTENSIONS the file extensions an
# importer reads, MAGIC the leading bytes of its files ("GGUF"), FOLDERS the marker files of the
# folders it reads (a folder holding config.json). The library is built with hidden visibility:
# only the entry points that RLX_DEFINE_TARGET_PLUGIN / RLX_DEFINE_IMPORTER_PLUGIN export are
# visible to the registry.
#
# Outputs go to the current binary folder, so RLX_PLUGIN_PATH=<build dir> finds the plugin
# before it is installed; `cmake --install` puts both files in <prefix>/share/rlx/plugins.d.
# Inside the rlx build (RLX_BUILD_PLUGIN_DIR is set) outputs go to that shared folder instead,
# where the uninstalled rlx looks, and a target not named in RLX_RUNTIME_TARGETS installs as
# component target-<name> by default, which packaging/ makes the package rlx-target-<name> (the
# names are collected in the global property RLX_TARGET_PACKAGES, the DESCRIPTION is kept in
# the library target's property RLX_PLUGIN_DESCRIPTION).
include_guard(GLOBAL)
include(GNUInstallDirs)

function(rlx_add_plugin)
  cmake_parse_arguments(PARSE_ARGV 0 P "" "NAME;KIND;VERSION;DESCRIPTION;COMPONENT"
                        "SOURCES;REQUIRES;EXTENSIONS;MAGIC;FOLDERS")
  if(P_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "rlx_add_plugin: unexpected arguments: ${P_UNPARSED_ARGUMENTS}")
  endif()
  if(NOT P_NAME MATCHES "^[A-Za-z0-9][A-Za-z0-9_.-]*$")
    message(FATAL_ERROR "rlx_add_plugin: NAME must be letters, digits, '_', '-' or '.', "
                        "got '${P_NAME}'")
  endif()
  if(NOT P_KIND STREQUAL "target" AND NOT P_KIND STREQUAL "importer")
    message(FATAL_ERROR "rlx_add_plugin(${P_NAME}): KIND must be target or importer")
  endif()
  if(NOT P_SOURCES)
    message(FATAL_ERROR "rlx_add_plugin(${P_NAME}): SOURCES is required")
  endif()
  if(NOT P_VERSION)
    set(P_VERSION "${PROJECT_VERSION}")
    if(NOT P_VERSION)
      set(P_VERSION "0.0.0")
    endif()
  endif()
  if(DEFINED RLX_BUILD_PLUGIN_DIR)
    set(out_dir "${RLX_BUILD_PLUGIN_DIR}")
    set(install_dir "${RLX_INSTALL_PLUGIN_DIR}")
    if(NOT P_COMPONENT AND P_KIND STREQUAL "target" AND NOT P_NAME IN_LIST RLX_RUNTIME_TARGETS)
      set(P_COMPONENT target-${P_NAME})
      set_property(GLOBAL APPEND PROPERTY RLX_TARGET_PACKAGES ${P_NAME})
    endif()
  else()
    set(out_dir "${CMAKE_CURRENT_BINARY_DIR}")
    set(install_dir "${CMAKE_INSTALL_DATADIR}/rlx/plugins.d")
  endif()
  if(NOT P_COMPONENT)
    set(P_COMPONENT runtime)
  endif()

  set(tgt rlx_${P_KIND}_${P_NAME})
  add_library(${tgt} MODULE ${P_SOURCES})
  target_link_libraries(${tgt} PRIVATE rlx::sdk rlx::core)
  target_compile_features(${tgt} PRIVATE cxx_std_20)
  # The version the plugin reports is the one its manifest says (plugin.h reads it).
  target_compile_definitions(${tgt} PRIVATE RLX_PLUGIN_VERSION="${P_VERSION}")
  # An installed plugin finds librlx_sdk and librlx_core in the lib folder of its own prefix.
  if(IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}")
    set(rpath "${CMAKE_INSTALL_LIBDIR}")
  else()
    file(RELATIVE_PATH to_lib "/p/${install_dir}" "/p/${CMAKE_INSTALL_LIBDIR}")
    set(rpath "$ORIGIN/${to_lib}")
  endif()
  set_target_properties(${tgt} PROPERTIES
    PREFIX "lib"
    OUTPUT_NAME ${tgt}
    LIBRARY_OUTPUT_DIRECTORY "${out_dir}"
    CXX_VISIBILITY_PRESET hidden
    VISIBILITY_INLINES_HIDDEN ON
    INSTALL_RPATH "${rpath}"
    INSTALL_RPATH_USE_LINK_PATH OFF
    RLX_PLUGIN_DESCRIPTION "${P_DESCRIPTION}")

  # TOML basic strings: escape backslashes and quotes.
  set(desc "${P_DESCRIPTION}")
  string(REPLACE "\\" "\\\\" desc "${desc}")
  string(REPLACE "\"" "\\\"" desc "${desc}")
  set(libs "")
  foreach(lib IN LISTS P_REQUIRES)
    list(APPEND libs "\"${lib}\"")
  endforeach()
  list(JOIN libs ", " libs)
  set(toml "[plugin]
name = \"${P_NAME}\"
kind = \"${P_KIND}\"
version = \"${P_VERSION}\"
abi = \"${RLX_ABI_MAJOR}.${RLX_ABI_MINOR}\"
library = \"$<TARGET_FILE_NAME:${tgt}>\"
description = \"${desc}\"

[requires]
libraries = [${libs}]
")
  if(P_KIND STREQUAL "importer")
    set(exts "")
    foreach(ext IN LISTS P_EXTENSIONS)
      list(APPEND exts "\"${ext}\"")
    endforeach()
    list(JOIN exts ", " exts)
    string(APPEND toml "\n[importer]\nextensions = [${exts}]\n")
    foreach(key magic folders)
      string(TOUPPER ${key} arg)
      if(P_${arg})
        set(items "")
        foreach(item IN LISTS P_${arg})
          string(REPLACE "\\" "\\\\" item "${item}")
          string(REPLACE "\"" "\\\"" item "${item}")
          list(APPEND items "\"${item}\"")
        endforeach()
        list(JOIN items ", " items)
        string(APPEND toml "${key} = [${items}]\n")
      endif()
    endforeach()
  elseif(P_EXTENSIONS OR P_MAGIC OR P_FOLDERS)
    message(FATAL_ERROR "rlx_add_plugin(${P_NAME}): EXTENSIONS, MAGIC and FOLDERS are for importers")
  endif()
  file(GENERATE OUTPUT "${out_dir}/${P_NAME}.toml" CONTENT "${toml}")

  install(TARGETS ${tgt} LIBRARY DESTINATION "${install_dir}" COMPONENT ${P_COMPONENT})
  install(FILES "${out_dir}/${P_NAME}.toml" DESTINATION "${install_dir}" COMPONENT ${P_COMPONENT})
endfunction()
