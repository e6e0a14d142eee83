#include "http/not_committed.h"

namespace payorch::http {

Problem not_committed_problem(store::WriteStatus status) {
  switch (status) {
    case store::WriteStatus::busy: return Problem::storage_busy;
    case store::WriteStatus::stopped: return Problem::shutting_down;
    case store::WriteStatus::committed:
    case store::WriteStatus::declined:
    case store::WriteStatus::rejected:
    case store::WriteStatus::failed: return Problem::storage_unavailable;
  }
  return Problem::storage_unavailable;
}

Response not_committed(store::WriteStatus status, NotCommitted detail, unsigned http_version) {
  const Problem problem = not_committed_problem(status);
  std::string& said = problem == Problem::storage_busy    ? detail.busy
                      : problem == Problem::shutting_down ? detail.stopped
                                                          : detail.unavailable;
  return make_problem(problem, std::move(said), {}, http_version);
}

Response callback_not_committed(std::string detail, unsigned http_version) {
  return make_problem(Problem::storage_unavailable, std::move(detail), {}, http_version);
}

}  // namespace payorch::http
