# cria_module(NAME DEPS ...): a static library cria_NAME from src/NAME/**/*.cpp.
# Public headers live in include/cria/NAME/, private ones beside the sources.
function(cria_module name)
  cmake_parse_arguments(M "" "" "DEPS" ${ARGN})
  file(GLOB_RECURSE sources CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/src/${name}/*.cpp)
  if(NOT sources)
    set(sources ${PROJECT_SOURCE_DIR}/cmake/empty.cpp)  # module not written yet
  endif()
  add_library(cria_${name} STATIC ${sources})
  target_include_directories(cria_${name}
    PUBLIC $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include>
    PRIVATE ${PROJECT_SOURCE_DIR}/src)
  target_link_libraries(cria_${name} PUBLIC ${M_DEPS})
  cria_apply_warnings(cria_${name})
  # Remembered for the layering test, so it reads the same list the build links.
  set_property(GLOBAL APPEND PROPERTY CRIA_LAYER_MODULES ${name})
  set_property(GLOBAL PROPERTY CRIA_LAYER_DEPS_${name} ${M_DEPS})
endfunction()

# cria_module_tests(NAME LIBS ...): one GoogleTest binary test_NAME from tests/NAME/*.cpp.
function(cria_module_tests name)
  cmake_parse_arguments(T "" "" "LIBS" ${ARGN})
  # cria_test_support links cria_core, so every test binary has it too.
  set_property(GLOBAL APPEND PROPERTY CRIA_LAYER_TESTS ${name})
  set_property(GLOBAL PROPERTY CRIA_LAYER_TEST_LIBS_${name} ${T_LIBS} cria_core)
  file(GLOB sources CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/tests/${name}/*.cpp)
  if(NOT sources)
    return()
  endif()
  add_executable(test_${name} ${sources})
  target_include_directories(test_${name} PRIVATE ${PROJECT_SOURCE_DIR}/src ${PROJECT_SOURCE_DIR}/tests)
  target_link_libraries(test_${name} PRIVATE ${T_LIBS} cria_test_support GTest::gtest GTest::gtest_main)
  target_compile_definitions(test_${name} PRIVATE
    CRIA_SOURCE_DIR="${PROJECT_SOURCE_DIR}" CRIA_BINARY_DIR="${CMAKE_BINARY_DIR}")
  cria_apply_warnings(test_${name})
  gtest_discover_tests(test_${name}
    WORKING_DIRECTORY ${PROJECT_SOURCE_DIR}
    DISCOVERY_TIMEOUT 60
    PROPERTIES LABELS ${name})
endfunction()

# cria_write_layering_file(PATH): the modules and test binaries declared so far
# with the cria modules they link directly, one per line:
#   module NAME DEP...      (cria_module(NAME DEPS ...), "cria_" dropped)
#   tests NAME LIB...       (cria_module_tests(NAME LIBS ...))
# The layering test (tests/layering) reads it: the include rules come from the
# same calls that decide what links, never from a second copy.
function(cria_write_layering_file path)
  set(text "")
  foreach(kind module tests)
    if(kind STREQUAL "module")
      get_property(names GLOBAL PROPERTY CRIA_LAYER_MODULES)
    else()
      get_property(names GLOBAL PROPERTY CRIA_LAYER_TESTS)
    endif()
    foreach(name ${names})
      if(kind STREQUAL "module")
        get_property(deps GLOBAL PROPERTY CRIA_LAYER_DEPS_${name})
      else()
        get_property(deps GLOBAL PROPERTY CRIA_LAYER_TEST_LIBS_${name})
      endif()
      set(line "${kind} ${name}")
      foreach(dep ${deps})
        if(dep MATCHES "^cria_(.+)$")
          string(APPEND line " ${CMAKE_MATCH_1}")
        endif()
      endforeach()
      string(APPEND text "${line}\n")
    endforeach()
  endforeach()
  file(CONFIGURE OUTPUT ${path} CONTENT "${text}" @ONLY)
endfunction()
