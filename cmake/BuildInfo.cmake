# Runs at build time: writes OUTPUT from TEMPLATE with the current git commit
# and build number (commit count). configure_file leaves the file untouched
# when nothing changed, so an unchanged tree does not relink.
set(CRIA_GIT_COMMIT "unknown")
set(CRIA_BUILD_NUMBER "0")
set(CRIA_GIT_DIRTY "")
find_package(Git QUIET)
if(GIT_FOUND)
  execute_process(COMMAND ${GIT_EXECUTABLE} rev-parse --short=12 HEAD
    WORKING_DIRECTORY ${SOURCE_DIR} OUTPUT_VARIABLE commit RESULT_VARIABLE rc
    OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  if(rc EQUAL 0)
    set(CRIA_GIT_COMMIT ${commit})
    execute_process(COMMAND ${GIT_EXECUTABLE} rev-list --count HEAD
      WORKING_DIRECTORY ${SOURCE_DIR} OUTPUT_VARIABLE count
      OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
    set(CRIA_BUILD_NUMBER ${count})
    execute_process(COMMAND ${GIT_EXECUTABLE} status --porcelain --untracked-files=no
      WORKING_DIRECTORY ${SOURCE_DIR} OUTPUT_VARIABLE status
      OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
    if(status)
      set(CRIA_GIT_DIRTY "-dirty")
    endif()
  endif()
endif()
configure_file(${TEMPLATE} ${OUTPUT} @ONLY)
