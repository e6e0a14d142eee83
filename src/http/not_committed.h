#pragma once
// What a handler answers when storage did not do its work: the one mapping from the writer's
// verdict on a job (store::WriteStatus) to the problem (the tenant API, the admin API and vendor
// callbacks all read it), and the one answer to a read that threw.
#include <exception>
#include <string>
#include <string_view>

#include "http/problem.h"
#include "store/writer.h"

namespace payorch::http {

// The problem a writer job answers when it did not commit (store::WriteStatus):
//   busy              storage-busy         the database stayed locked through every retry
//   stopped           shutting-down        the writer is draining; the job never ran
//   rejected, failed  storage-unavailable  the job threw, or the transaction failed
// Nothing of the job is written in any of them, so the client may retry with the same request.
// `committed` and `declined` map to storage-unavailable too: a caller that asks for either had
// a job that ended without the result it was written to produce (a job that declines answers
// its own refusal before it asks).
Problem not_committed_problem(store::WriteStatus status);

// What a handler tells its client about a job that did not commit, in its own words, by the
// problem not_committed_problem chose.
struct NotCommitted {
  std::string busy;         // storage-busy
  std::string stopped;      // shutting-down
  std::string unavailable;  // storage-unavailable
};
Response not_committed(store::WriteStatus status, NotCommitted detail, unsigned http_version);

// An intake (a payment's or a refund's) that did not commit: `what` ("payment", "refund") was
// not recorded and the client retries with the same key. A storage failure is logged as
// `event` with the request's tenant and operation_id.
Response intake_not_committed(store::WriteStatus status, const std::string& error, std::string_view event,
                              const std::string& tenant_id, const std::string& operation_id,
                              std::string_view what, unsigned http_version);

// A vendor callback that did not commit is answered storage-unavailable whatever the verdict:
// the vendor sends it again in every case, and storage-busy or shutting-down would tell it
// nothing it acts on.
Response callback_not_committed(std::string detail, unsigned http_version);

// A request whose handler threw (a read of the database failed, or a row could not be turned
// into its view): the error is logged as http.request_failed with the request's route (of
// `path`) and `method`, and the client is answered storage-unavailable with `detail`. The
// error's own text is never sent: it names database internals (statements, files, constraint
// names) that only the operator's log should carry.
Response request_failed(const std::exception& e, std::string_view path, std::string_view method,
                        std::string detail, unsigned http_version);

}  // namespace payorch::http
