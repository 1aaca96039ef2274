# Read by CTest after the discovered webgpu tests (TEST_INCLUDE_FILES): the headless-Chromium test
# polls for the browser's report, and beside other tests on two shared cores its polling starved
# and it timed out. It runs alone (RUN_SERIAL), labelled slow so that `ctest -LE slow` leaves it
# out.
set(rlx_chromium_test webgpu.WebGpuTarget.EsModuleRunsInHeadlessChromiumLikeTheCpu)
# list(FIND), not IN_LIST: CTest reads this without the project's policies.
list(FIND rlx_webgpu_tests_TESTS ${rlx_chromium_test} rlx_chromium_index)
if(rlx_chromium_index GREATER -1)
  set_tests_properties(${rlx_chromium_test} PROPERTIES LABELS "webgpu;slow" RUN_SERIAL ON)
endif()
