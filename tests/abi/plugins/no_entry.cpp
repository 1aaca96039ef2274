// A shared library that is not an rlx plugin: it lacks rlx_plugin_abi.
extern "C" __attribute__((visibility("default"))) int not_an_rlx_plugin() {
  return 42;
}
