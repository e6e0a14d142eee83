# The demo vendor (payorch-vendor-sim) is a second, independent implementation of the `sim`
# protocol: it must not be built from payorch's own store, HTTP server, configuration or digest
# code, or a bug there would be hidden by the same bug in the vendor that tests it.
# Run by ctest (vendor_sim_independent) as
#   cmake -DLINKS=<payorch_vendor_sim's LINK_LIBRARIES> -DBINARY=<payorch-vendor-sim>
#         -DNM=<nm> -DSOURCE_DIR=<tree> -P tools/check_vendor_sim_independent.cmake
# and fails naming every dependency it finds: a link library, an include, or a symbol of
# payorch's code in the binary.
cmake_minimum_required(VERSION 3.22)
set(failures "")
string(REPLACE "|" ";" LINKS "${LINKS}")  # joined with | to pass through the command line

# 1. What the library links.
foreach(forbidden payorch_store payorch_http payorch_config payorch_net payorch_providers
                  payorch_engine payorch_delivery payorch_ops)
  if(forbidden IN_LIST LINKS)
    list(APPEND failures "payorch_vendor_sim links ${forbidden}")
  endif()
endforeach()

# 2. What its sources include.
file(GLOB sources ${SOURCE_DIR}/src/vendor_sim/*.h ${SOURCE_DIR}/src/vendor_sim/*.cpp)
list(APPEND sources ${SOURCE_DIR}/src/app/vendor_sim_main.cpp)
foreach(source ${sources})
  file(STRINGS ${source} includes REGEX
       "^[ \t]*#[ \t]*include[ \t]*\"(store|http|config|net|providers|engine|delivery|ops)/|^[ \t]*#[ \t]*include[ \t]*\"core/(digest|intent)\\.h\"")
  foreach(line ${includes})
    file(RELATIVE_PATH where ${SOURCE_DIR} ${source})
    string(STRIP "${line}" line)
    list(APPEND failures "${where}: ${line}")
  endforeach()
endforeach()

# 3. What the binary holds: no function of those libraries may have been linked in.
execute_process(COMMAND ${NM} --demangle --defined-only ${BINARY}
                OUTPUT_VARIABLE symbols RESULT_VARIABLE nm_result)
if(NOT nm_result EQUAL 0)
  list(APPEND failures "cannot read the symbols of ${BINARY} with ${NM}")
endif()
string(REGEX MATCHALL
       "payorch::(store|http|config|net|providers|engine|delivery|ops)::[A-Za-z_]+|payorch::(sha256_hex|jcs_canonicalize|request_digest|digest_fields)\\("
       found "${symbols}")
list(REMOVE_DUPLICATES found)
foreach(symbol ${found})
  list(APPEND failures "payorch-vendor-sim contains ${symbol}")
endforeach()

if(failures)
  list(JOIN failures "\n  " text)
  message(FATAL_ERROR "payorch-vendor-sim depends on payorch's own code:\n  ${text}")
endif()
message(STATUS "payorch-vendor-sim is independent of payorch's store, http, config and digest code")
