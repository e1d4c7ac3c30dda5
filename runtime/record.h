// reduce-tune: recording the call points a program makes without an exact tuning (Options::record).
// Not installed.
#pragma once

namespace reduce_tune {

/// Whether $REDUCE_TUNE_RECORD asks for recording ("1", "true", "yes" or "on").
bool record_from_env();

} // namespace reduce_tune
