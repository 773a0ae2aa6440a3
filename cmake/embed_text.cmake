# Writes OUTPUT, a C++ fragment holding INPUT's text as one raw string literal, so a
# file (the lab's report template) ships inside the binary. Run with cmake -P.
file(READ "${INPUT}" content)
string(FIND "${content}" ")tsembed\"" clash)
if(NOT clash EQUAL -1)
  message(FATAL_ERROR "${INPUT} contains the raw-string delimiter )tsembed\"")
endif()
file(WRITE "${OUTPUT}.tmp" "R\"tsembed(${content})tsembed\"\n")
file(RENAME "${OUTPUT}.tmp" "${OUTPUT}")
