# Compiler settings shared by every target.

if(CRIA_USE_CCACHE)
  find_program(CRIA_CCACHE ccache)
  if(CRIA_CCACHE)
    set(CMAKE_CXX_COMPILER_LAUNCHER ${CRIA_CCACHE})
  endif()
endif()

if(CRIA_SANITIZE AND CRIA_TSAN)
  message(FATAL_ERROR "CRIA_SANITIZE and CRIA_TSAN cannot be combined")
endif()
if(CRIA_SANITIZE)
  add_compile_options(-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer)
  add_link_options(-fsanitize=address,undefined)
endif()
if(CRIA_TSAN)
  add_compile_options(-fsanitize=thread -fno-omit-frame-pointer)
  add_link_options(-fsanitize=thread)
endif()

function(cria_apply_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wno-missing-field-initializers)
endfunction()
