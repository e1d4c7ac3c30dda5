# rt_raw_literal(OUT TEXT DELIM PREFIX): OUT = TEXT as adjacent C++ raw string literals with
# delimiter DELIM, each line starting with PREFIX, in chunks of 8000 characters (below compiler
# limits on one literal); "" for an empty TEXT.
function(rt_raw_literal out text delim prefix)
  string(LENGTH "${text}" len)
  set(lit "")
  set(pos 0)
  while(pos LESS len)
    string(SUBSTRING "${text}" ${pos} 8000 chunk)
    string(APPEND lit "${prefix}R\"${delim}(${chunk})${delim}\"\n")
    math(EXPR pos "${pos} + 8000")
  endwhile()
  if(lit STREQUAL "")
    set(lit "${prefix}\"\"\n")
  endif()
  set(${out} "${lit}" PARENT_SCOPE)
endfunction()
