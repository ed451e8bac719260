# write_if_changed(PATH CONTENT): writes PATH only when its content differs, so generated sources
# keep their timestamps (and dependents are not rebuilt) when nothing changed.
function(write_if_changed path content)
  if(EXISTS "${path}")
    file(READ "${path}" old)
    if(old STREQUAL content)
      return()
    endif()
  endif()
  file(WRITE "${path}" "${content}")
endfunction()
