# Protobuf for p4c from a system protobuf without a CMake package (Debian
# 12's 3.21): CMake's FindProtobuf module, with tools/bf-p4c/protoc, which
# makes the C++ it writes take p4c's strings, and a protobuf_generate as p4c
# expects it from protobuf's own package. CMake's (3.25) names each output
# after the proto's path under the current source folder, which is wrong for
# p4runtime's protos outside it; protoc, and so this one, name it after the
# proto's path under its import folder.
set(Protobuf_PROTOC_EXECUTABLE "${CMAKE_CURRENT_LIST_DIR}/protoc" CACHE FILEPATH "protoc" FORCE)
find_package(Protobuf 3 MODULE REQUIRED)

# protobuf_generate(TARGET t LANGUAGE cpp|python IMPORT_DIRS dirs...
#                   PROTOC_OUT_DIR dir [PROTOS files...] [OUT_VAR var])
# generates the code of PROTOS (default: t's .proto sources) into t;
# DEPENDENCIES, which p4c passes too, adds nothing to the outputs' own.
function(protobuf_generate)
  cmake_parse_arguments(arg "" "TARGET;LANGUAGE;PROTOC_OUT_DIR;OUT_VAR"
                        "PROTOS;IMPORT_DIRS;DEPENDENCIES" ${ARGN})
  if(NOT arg_PROTOS)
    get_target_property(arg_PROTOS ${arg_TARGET} SOURCES)
    list(FILTER arg_PROTOS INCLUDE REGEX "\\.proto$")
  endif()
  if(arg_LANGUAGE STREQUAL "cpp")
    set(suffixes .pb.h .pb.cc)
  elseif(arg_LANGUAGE STREQUAL "python")
    set(suffixes _pb2.py)
  else()
    message(FATAL_ERROR "protobuf_generate: no LANGUAGE cpp or python")
  endif()
  set(import_dirs)
  set(import_flags)
  foreach(dir IN LISTS arg_IMPORT_DIRS)
    get_filename_component(dir "${dir}" ABSOLUTE)
    list(APPEND import_dirs "${dir}")
    list(APPEND import_flags -I "${dir}")
  endforeach()
  set(outputs)
  foreach(proto IN LISTS arg_PROTOS)
    get_filename_component(proto "${proto}" ABSOLUTE)
    set(name)
    foreach(dir IN LISTS import_dirs)
      file(RELATIVE_PATH candidate "${dir}" "${proto}")
      if(NOT candidate MATCHES "^\\.\\./")
        set(name "${candidate}")
        break()
      endif()
    endforeach()
    if(NOT name)
      message(FATAL_ERROR "protobuf_generate: ${proto} is in none of ${import_dirs}")
    endif()
    string(REGEX REPLACE "\\.proto$" "" stem "${name}")
    set(generated)
    foreach(suffix IN LISTS suffixes)
      list(APPEND generated "${arg_PROTOC_OUT_DIR}/${stem}${suffix}")
    endforeach()
    add_custom_command(
      OUTPUT ${generated}
      COMMAND protobuf::protoc --${arg_LANGUAGE}_out "${arg_PROTOC_OUT_DIR}" ${import_flags} "${proto}"
      DEPENDS "${proto}" protobuf::protoc
      COMMENT "protoc --${arg_LANGUAGE}_out ${name}"
      VERBATIM)
    list(APPEND outputs ${generated})
  endforeach()
  set_source_files_properties(${outputs} PROPERTIES GENERATED TRUE)
  target_sources(${arg_TARGET} PRIVATE ${outputs})
  if(arg_OUT_VAR)
    set(${arg_OUT_VAR} ${outputs} PARENT_SCOPE)
  endif()
endfunction()
