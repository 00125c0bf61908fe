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
endfunction()

# cria_module_tests(NAME LIBS ...): one GoogleTest binary test_NAME from tests/NAME/*.cpp.
function(cria_module_tests name)
  cmake_parse_arguments(T "" "" "LIBS" ${ARGN})
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
