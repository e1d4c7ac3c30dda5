// reduce-tune: recording the call points a program makes without an exact tuning. The Reducer
// notes an entry's point when the entry is first made ready (runtime/entry_cache.cpp), so each
// point costs one store write per Reducer and the calls after it nothing.
#include "runtime/record.h"

#include "kernels/user_op.h"
#include "runtime/reducer_state.h"

#include <cstdlib>
#include <string_view>

namespace reduce_tune {

bool record_from_env() {
  const char* v = std::getenv("REDUCE_TUNE_RECORD");
  if (!v) return false;
  const std::string_view s = v;
  return s == "1" || s == "true" || s == "yes" || s == "on";
}

void Reducer::Impl::note_point(const EntryKey& k, const Choice& choice, const UserOp* user) {
  if (choice.match == Match::exact) return;
  try {
    std::lock_guard lock(store_mu);
    if (!store) {
      // Recording asks for a store: make the user's (a lookup finds nothing in it it did not
      // find before). Once it cannot be made, the process records nothing more.
      if (no_store_for_records) return;
      try {
        store = std::make_unique<db::Store>(options.store_path.empty() ? db::default_store_path()
                                                                        : options.store_path);
      } catch (const db::StoreError&) {
        no_store_for_records = true;
        return;
      }
    }
    db::RecordedPoint p;
    p.device_uuid = device.uuid, p.device_name = device.name;
    p.dtype = k.dtype, p.op = k.op, p.problem = k.problem, p.shape = k.at;
    p.grade = std::string(name(choice.match));
    if (user) {
      // Under its hash, its description kept beside it: tune --recorded tunes it from the store.
      p.user = user->hash;
      store->add_reduction({user->hash, user->description.canonical(), to_text(user->description), {}});
    }
    store->record_point(p);
  } catch (const std::exception&) {
    // A store that cannot be written (read-only, full, locked too long) loses the note only.
  }
}

} // namespace reduce_tune
