// The first use of a plugin: what rlx does in its own process once the probe has passed the
// plugin, and what the probe does in its child process first (probe_main.cpp). One function for
// both, so the probe exercises exactly the calls rlx is about to make.
#include "internal.h"

namespace rlx::registry::detail {

void load_record(const Manifest& m, PluginRecord& rec, bool build_legality,
                 std::vector<std::shared_ptr<void>>& libraries, const StageFn& on_stage) {
  LoadResult loaded = load_plugin(m, rec.library_path, on_stage);
  if (!loaded.abi.empty()) rec.abi = loaded.abi;
  if (loaded.status != PluginStatus::kAvailable) {
    rec.status = loaded.status;
    rec.detail = loaded.detail;
    return;
  }
  // The plugin's own answers are authoritative over the manifest's.
  if (!loaded.version.empty()) rec.version = loaded.version;
  libraries.push_back(loaded.library);
  rec.target = loaded.target;
  rec.importer = loaded.importer;
  rec.status = PluginStatus::kAvailable;
  rec.detail.clear();
  if (rec.target) {
    if (on_stage) on_stage(LoadStage::kCanExecute);
    Verdict v = rec.target->can_execute();
    if (!v.ok) {
      rec.status = PluginStatus::kCodegenOnly;
      rec.detail = v.reason.empty() ? "cannot execute on this machine" : v.reason;
    } else if (!v.reason.empty()) {
      rec.detail = v.reason;  // how it executes here (cpu: kernels compiled or interpreted)
    }
    if (build_legality) {
      if (on_stage) on_stage(LoadStage::kLegality);
      rec.legality = build_legality_table(*rec.target);
    }
  }
}

}  // namespace rlx::registry::detail
