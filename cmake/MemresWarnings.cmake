# SPDX-License-Identifier: MIT
# One curated warning list for every target we build (library, tests, examples, bench).
set(MEMRES_C_WARNINGS
  -Wall -Wextra -Wpedantic -Wshadow -Wstrict-prototypes -Wmissing-prototypes
  -Wconversion -Wsign-conversion -Wpointer-arith -Wcast-align -Wformat=2
  -Wundef -Wvla)
set(MEMRES_CXX_WARNINGS -Wall -Wextra -Wshadow)

function(memres_target_warnings target)
  target_compile_options(${target} PRIVATE
    $<$<COMPILE_LANGUAGE:C>:${MEMRES_C_WARNINGS}>
    $<$<COMPILE_LANGUAGE:CXX>:${MEMRES_CXX_WARNINGS}>)
  if(MEMRES_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()
