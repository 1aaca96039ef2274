# Read by CTest after the discovered webgpu tests (TEST_INCLUDE_FILES): the headless-Chromium tests
# poll for the browser's report, and beside other tests on two shared cores their polling starved
# and timed out. They run alone (RUN_SERIAL), labelled slow so that `ctest -LE slow` leaves them
# out.
foreach(rlx_chromium_test webgpu.WebGpuTarget.EsModuleRunsInHeadlessChromiumLikeTheCpu
        webgpu.WebGpuTarget.FixturesRunInHeadlessChromiumOnI32Words)
  # list(FIND), not IN_LIST: CTest reads this without the project's policies.
  list(FIND rlx_webgpu_tests_TESTS ${rlx_chromium_test} rlx_chromium_index)
  if(rlx_chromium_index GREATER -1)
    set_tests_properties(${rlx_chromium_test} PROPERTIES LABELS "webgpu;slow" RUN_SERIAL ON)
  endif()
endforeach()
