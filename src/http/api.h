#pragma once
// The tenant-facing API of docs/contract.md §2 and the health endpoints. Routing and JSON mapping only:
// the intake decision lives in store::record_intake, the states in core/state_machine.
#include <boost/asio/any_io_executor.hpp>
#include <atomic>
#include <string_view>
#include <chrono>
#include <functional>
#include <vector>
#include <boost/url/params_view.hpp>
#include <memory>
#include <tuple>

#include "config/config.h"
#include "core/intent.h"
#include "core/payment.h"
#include "core/clock.h"
#include "http/auth.h"
#include "http/server.h"
#include "util/change_notifier.h"
#include "util/metrics.h"
#include "store/exposure.h"
#include "store/outbox.h"
#include "store/read_pool.h"
#include "store/status.h"
#include "store/store.h"

namespace payorch::http {

inline constexpr std::string_view payments_path = "/v1/payments";
inline constexpr std::string_view events_path = "/v1/events";
inline constexpr std::string_view refunds_path = "/v1/refunds";
// The last segment of /v1/payments/{operation_id}/refunds.
inline constexpr std::string_view refunds_segment = "/refunds";

// The request's `Prefer: wait` in seconds: every Prefer line, read as one list.
int wait_preference(const Request& req);
// The request's Idempotency-Key header, when present.
std::optional<std::string_view> idempotency_key_header(const Request& req);
// The answer to an intent (a payment's or a refund's) core refused: the catalogue problem core
// names, with its field errors.
Response intent_rejected(const IntentRejection& rejection, unsigned version);

// What only the running engine knows, for GET /status.
struct ProviderHealth {
  std::string name;
  bool intake_paused = false;
  std::string last_error;
  std::string breaker = "closed";  // the engine's circuit breaker: "closed" or "open"
};

struct ApiDeps {
  const config::Config& config;
  store::Store& store;
  const Clock& clock;
  Random& rng;  // used on the writer thread only
  // Where `Prefer: wait` timers run.
  boost::asio::any_io_executor executor;
  // Published after a payment's state changed (engine, reconciliation).
  ChangeNotifier& changes;
  // True while the provider is at a risk cap: new intents are refused with 503 intake-paused.
  std::function<bool(const std::string& provider)> intake_paused;
  // Called after a new payment is committed, so the engine can pick it up without waiting for
  // its next poll.
  std::function<void()> on_created;
  std::function<std::vector<ProviderHealth>()> provider_health;
  // The admin API (reconciliation, any tenant's payment): its paths are handed over whole.
  Handler* admin = nullptr;
  // Vendor callbacks (/v1/callbacks/{provider}): signed by the vendor, no bearer token.
  Handler* callbacks = nullptr;
  // Counters shown by GET /metrics (with gauges computed when scraped). Null: no /metrics.
  Metrics* metrics = nullptr;
  // Shown by GET /status: this node (daemon::node_id) and its engine's lease owner id.
  std::string node_id = {};
  std::string lease_owner = {};
};

// The routing is api.cpp; the handlers live by concern: payments_api.cpp (intake, reads, lists),
// refunds_api.cpp (refunds),
// payment_wait.cpp (`Prefer: wait`), events_api.cpp (the feed), status_api.cpp (/readyz,
// /status, /metrics).
class Api final : public Handler {
public:
  explicit Api(ApiDeps deps);
  void handle(Request&& req, Responder done) override;
  // 401 from the header alone for a tenant route without a tenant token, and for an admin
  // route without the admin token (AdminApi::screen); the body is then never read.
  std::optional<Response> screen(const Request& header) override;
  // /healthz, /readyz, /status, /metrics, the console page and the admin routes.
  bool is_operator_request(const Request& header) const override;

  // Draining: new intakes answer 503 shutting-down, /readyz turns 503; reads still work.
  void set_draining() { draining_.store(true); }
  bool draining() const { return draining_.load(); }
  void set_ready() { ready_.store(true); }

private:
  // What every intake (a payment's or a refund's) refuses before it reads the body: draining
  // (503 shutting-down) and a body that is not JSON (415); nullopt when it may go on.
  std::optional<Response> refuse_intake(const Request& req) const;
  void post_payment(Request& req, const std::string& tenant_id, Responder done);
  // Answers `status` for `payment` now, or — with `Prefer: wait=N` and a payment not yet
  // terminal — when it becomes terminal or N seconds passed, whichever is first.
  void answer_payment(unsigned status, const Payment& payment, bool replayed, int wait_s,
                      unsigned version, Responder done);
  // The `Prefer: wait` of every payment answer (docs/contract.md §2): build(payment) now, or — when wait_s
  // > 0 and the payment is not terminal — build(the payment as committed then) once it is
  // terminal or wait_s seconds passed, whichever is first, with Preference-Applied.
  void answer_when_settled(const Payment& payment, int wait_s,
                           std::function<Response(const Payment&)> build, Responder done);
  // /readyz and /status report the database as it is at the request (see api.cpp): `then` runs
  // once the writer's word on it is current — at once, or after a probe write — with `stalled`
  // when the probe did not finish in time.
  void with_current_storage_health(std::function<void(bool stalled)> then);
  Response readiness(unsigned version, bool stalled);
  Response status(unsigned version, bool stalled);
  // `done` is moved from only once the payment has been read: a read that throws leaves it to
  // the caller, for its 503.
  void get_payment(const Request& req, const std::string& tenant_id, std::string_view operation_id,
                   Responder&& done);
  Response list_payments(const Request& req, const std::string& tenant_id, boost::urls::params_view query);
  // Refunds (refunds_api.cpp, docs/refunds.md).
  void post_refund(Request& req, const std::string& tenant_id, std::string payment_operation_id,
                   Responder done);
  void answer_refund(unsigned status, const Payment& row, bool replayed, int wait_s, unsigned version,
                     Responder done);
  void get_refund(const Request& req, const std::string& tenant_id, std::string_view operation_id,
                  Responder&& done);
  Response list_refunds(const Request& req, const std::string& tenant_id,
                        std::string_view payment_operation_id);
  Response list_events(const Request& req, const std::string& tenant_id, boost::urls::params_view query);
  Response metrics(unsigned version);
  // What /status and /metrics report, read in one go.
  std::tuple<store::StatusCounts, std::vector<store::ExposureRow>, store::OutboxBacklog>
  read_operations_snapshot();

  ApiDeps deps_;
  Authenticator auth_;
  std::vector<std::string> push_tenants_;  // tenants with a webhook (the others read the feed)
  std::atomic<bool> draining_{false};
  std::atomic<bool> ready_{false};
  MonotonicTime started_;  // for uptime_s
};

}  // namespace payorch::http
