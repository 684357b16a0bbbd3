# SPDX-License-Identifier: MIT
# MEMRES_SANITIZE=address -> ASan + UBSan (no recovery: any report fails the test)
# MEMRES_SANITIZE=thread  -> TSan
set(MEMRES_SANITIZE_FLAGS "")
if(MEMRES_SANITIZE STREQUAL "address")
  set(MEMRES_SANITIZE_FLAGS -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer)
elseif(MEMRES_SANITIZE STREQUAL "thread")
  set(MEMRES_SANITIZE_FLAGS -fsanitize=thread -fno-omit-frame-pointer)
elseif(NOT MEMRES_SANITIZE STREQUAL "")
  message(FATAL_ERROR "MEMRES_SANITIZE must be '', 'address' or 'thread', not '${MEMRES_SANITIZE}'")
endif()

# MEMRES_FUZZ: the library and the tests' support code get libFuzzer's
# coverage instrumentation too, so the fuzzer is guided by memres's branches
# and not only by the harness's.
if(MEMRES_FUZZ)
  list(APPEND MEMRES_SANITIZE_FLAGS -fsanitize=fuzzer-no-link)
endif()

function(memres_target_sanitizers target)
  if(MEMRES_SANITIZE_FLAGS)
    target_compile_options(${target} PRIVATE ${MEMRES_SANITIZE_FLAGS})
    target_link_options(${target} PUBLIC ${MEMRES_SANITIZE_FLAGS})
  endif()
endfunction()
