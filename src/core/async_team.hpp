// async_team.hpp: threads that run one job while the thread that started it goes on (an upload's pack into pinned
// slots runs on them while the caller enqueues the copies: pipeline/upload.cu).
//
// Why not host_parallel: its jobs are synchronous (the caller takes parts and returns when all are done), so a
// pack of chunk after chunk on it paid, per chunk, waking the team and the caller's time between packs, and could
// not run ahead of the copies; and a second team keeps the host team free for the caller's other loops. The team's
// threads are started once (as many as the largest job asked), sleep between jobs (worker_set.hpp) and serve one
// job at a time: a job started while another holds the team does not start, and its caller does the work itself.
#pragma once

namespace gknn::detail {

/// One job on the process's async team: `threads` threads each run body(context) once, beside the caller.
class AsyncJob {
 public:
  /// Starts the job on up to `threads` threads (fewer when threads cannot be made), unless threads < 1 or another
  /// job holds the team: then started() is false and nothing runs. body must not throw.
  AsyncJob(int threads, void (*body)(void* context), void* context);
  template <class Body>
  AsyncJob(int threads, Body* body)
      : AsyncJob(threads, [](void* c) { (*static_cast<Body*>(c))(); }, static_cast<void*>(body)) {}
  /// Waits until every thread has returned from body; the team is free again. Idempotent.
  void join();
  ~AsyncJob() { join(); }
  AsyncJob(const AsyncJob&) = delete;
  AsyncJob& operator=(const AsyncJob&) = delete;
  bool started() const { return started_; }

 private:
  bool started_ = false;
};

/// Threads the async team has made so far (they are made on first use and kept).
int async_team_threads();

}  // namespace gknn::detail
