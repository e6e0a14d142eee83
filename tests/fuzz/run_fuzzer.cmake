# Runs one libFuzzer binary for SECONDS over a working copy of its seeds, so the corpus in the
# repository is never written to. Fails (with the saved reproducer named) on any crash, timeout,
# leak, out-of-memory or property violation.
#   cmake -DFUZZER=... -DSEEDS=tests/fuzz/corpus/T -DWORK=build-asan/tests/fuzz/runs/T -DSECONDS=20 -P run_fuzzer.cmake
foreach(v FUZZER SEEDS WORK SECONDS)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "run_fuzzer.cmake: -D${v}= is required")
  endif()
endforeach()
file(MAKE_DIRECTORY ${WORK}/corpus ${WORK}/artifacts)
file(GLOB seeds ${SEEDS}/*)
if(seeds)
  file(COPY ${seeds} DESTINATION ${WORK}/corpus)
endif()
execute_process(
  COMMAND ${FUZZER} ${WORK}/corpus -max_total_time=${SECONDS} -timeout=10 -rss_limit_mb=2048
          -max_len=8192 -artifact_prefix=${WORK}/artifacts/ -print_final_stats=1
  RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  file(GLOB found ${WORK}/artifacts/*)
  message(FATAL_ERROR "${FUZZER} failed (exit ${rc}); reproducers: ${found}\n"
                      "replay one with: ${FUZZER} <file>; keep it as a regression seed in ${SEEDS}/")
endif()
