# Run at every build (traces/CMakeLists.txt): writes OUT, a header defining TERASIM_GIT_VERSION
# as `git describe --always --dirty` of SRC, and touches it only when the version changed, so
# that a new commit (or a dirty tree) recompiles one file and nothing else is rebuilt.
# --no-optional-locks: describe --dirty refreshes the index, which must not fail (or block)
# on another git process's lock.
execute_process(COMMAND git --no-optional-locks describe --always --dirty --abbrev=12
                WORKING_DIRECTORY ${SRC}
                OUTPUT_VARIABLE version OUTPUT_STRIP_TRAILING_WHITESPACE
                ERROR_QUIET)
if(NOT version)
  set(version "unknown")
endif()
set(content "#define TERASIM_GIT_VERSION \"${version}\"\n")
set(old "")
if(EXISTS ${OUT})
  file(READ ${OUT} old)
endif()
if(NOT old STREQUAL content)
  file(WRITE ${OUT} "${content}")
endif()
