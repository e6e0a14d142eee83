#pragma once
// The tenant-facing API of SPEC §2 and the health endpoints. Routing and JSON mapping only:
// the intake decision lives in store::record_intake, the states in core/state_machine.
#include <atomic>
#include <boost/url/params_view.hpp>
#include <memory>

#include "config/config.h"
#include "core/clock.h"
#include "http/auth.h"
#include "http/server.h"
#include "store/read_pool.h"
#include "store/writer.h"

namespace payorch::http {

struct ApiDeps {
  const config::Config& config;
  store::Writer& writer;
  store::ReadPool& reads;
  const Clock& clock;
  Random& rng;  // used on the writer thread only
};

class Api final : public Handler {
public:
  explicit Api(ApiDeps deps);
  void handle(Request&& req, Responder done) override;

  // Draining: new intakes answer 503 shutting-down, /readyz turns 503; reads still work.
  void set_draining() { draining_.store(true); }
  bool draining() const { return draining_.load(); }
  void set_ready() { ready_.store(true); }

private:
  void post_payment(Request& req, const std::string& tenant_id, Responder done);
  Response get_payment(const Request& req, const std::string& tenant_id, std::string_view operation_id);
  Response list_payments(const Request& req, const std::string& tenant_id, boost::urls::params_view query);

  ApiDeps deps_;
  Authenticator auth_;
  std::atomic<bool> draining_{false};
  std::atomic<bool> ready_{false};
};

}  // namespace payorch::http
