# One INTERFACE target carries warning and sanitizer flags for every project target.
add_library(trainsim_build_flags INTERFACE)
target_compile_options(trainsim_build_flags INTERFACE
  $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor -Woverloaded-virtual>
  # GCC 12 false positives in libstdc++/nlohmann; clang does not know these flags.
  $<$<AND:$<COMPILE_LANGUAGE:CXX>,$<CXX_COMPILER_ID:GNU>>:-Wno-array-bounds -Wno-stringop-overflow -Wno-restrict>)
if(TRAINSIM_ENABLE_WERROR)
  target_compile_options(trainsim_build_flags INTERFACE $<$<COMPILE_LANGUAGE:CXX>:-Werror>)
endif()
if(TRAINSIM_SANITIZE OR TRAINSIM_FUZZ)
  target_compile_options(trainsim_build_flags INTERFACE
    $<$<COMPILE_LANGUAGE:CXX>:-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer>)
  target_link_options(trainsim_build_flags INTERFACE -fsanitize=address,undefined)
endif()
if(TRAINSIM_FUZZ)
  # Coverage feedback for libFuzzer in every library; the fuzz targets link its main.
  target_compile_options(trainsim_build_flags INTERFACE $<$<COMPILE_LANGUAGE:CXX>:-fsanitize=fuzzer-no-link>)
endif()
