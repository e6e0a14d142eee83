#include "http/not_committed.h"

#include "http/instrumented.h"
#include "util/log.h"

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

Response intake_not_committed(store::WriteStatus status, const std::string& error, std::string_view event,
                              const std::string& tenant_id, const std::string& operation_id,
                              std::string_view what, unsigned http_version) {
  if (not_committed_problem(status) == Problem::storage_unavailable)
    log::error(event, error,
               {{"tenant_id", tenant_id}, {"operation_id", operation_id}, {"status", store::to_string(status)}});
  return not_committed(status,
                       {.busy = "database busy; retry with the same key",
                        .stopped = "payorchd is draining; retry with the same key",
                        .unavailable = "the " + std::string(what) + " was not recorded; retry with the same key"},
                       http_version);
}

Response callback_not_committed(std::string detail, unsigned http_version) {
  return make_problem(Problem::storage_unavailable, std::move(detail), {}, http_version);
}

Response request_failed(const std::exception& e, std::string_view path, std::string_view method,
                        std::string detail, unsigned http_version) {
  log::error("http.request_failed", e.what(), {{"route", route_of(path)}, {"method", method_label(method)}});
  return make_problem(Problem::storage_unavailable, std::move(detail), {}, http_version);
}

}  // namespace payorch::http
