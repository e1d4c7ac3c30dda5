// reduce-tune autotune-worker: the process that tunes points on first use for a program that
// links the library with Options::autotune (runtime/autotune.h has the protocol). The program
// starts it once and sends it one point at a time; it takes the point's claim in the store
// (db/claims.h), runs a guided search of that one point within the request's time (the sweep,
// checked against the CPU reference like every sweep), stores it, lets the claim go and replies.
// A user reduction's point is swept as `tune --reduction` sweeps it, under its hash, its
// description kept in the store; its results are not checked (the CPU evaluation stays in the
// program), which its measurements record. A description that does not compile is answered as a
// failure. A CUDA fault ends it (its context is lost) after it records the configuration as failed.
#pragma once

namespace reduce_tune {

/// How long a point's claim holds without its owner letting go, and how long a request waits for
/// another process's claim on the same point before it gives up (the program then runs with what
/// the store has).
inline constexpr double kClaimLeaseS = 30, kClaimWaitS = 5;
/// A worker with no request for this long exits (its CUDA context holds GPU memory); the program
/// starts another when it needs one.
inline constexpr double kWorkerIdleS = 60;

/// Serves requests from stdin, replies on stdout, until stdin closes or it idles kWorkerIdleS.
/// Returns the process's exit code: 0, or 3 (supervisor.h: kWorkerCudaFault) after a CUDA fault.
int serve_autotune();

} // namespace reduce_tune
