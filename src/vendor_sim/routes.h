#pragma once
// The sim's HTTP surface: authenticates /v1/ requests, routes them and the /_sim/ control API,
// and hands the work to the logic executor (one thread owns the ledger and all state, so no
// io thread ever waits for the disk). Routing only: behaviour lives in Vendor and Control.
#include <boost/asio/any_io_executor.hpp>

#include <array>
#include <string>

#include "vendor_sim/control.h"
#include "vendor_sim/listener.h"
#include "vendor_sim/vendor.h"

namespace payorch::vendor_sim {

class Routes {
public:
  // `vendor` and `control` must be used only on `logic`.
  Routes(boost::asio::any_io_executor logic, Vendor& vendor, Control& control,
         const std::string& api_key);

  // The Listener's RequestHandler.
  void handle(Request&& req, Responder done);

  // True when `authorization` is exactly "Bearer <api_key>" (compared in constant time).
  bool authorized(std::string_view authorization) const;

private:
  void route_v1(Request&& req, std::string_view path, Responder done);

  boost::asio::any_io_executor logic_;
  Vendor& vendor_;
  Control& control_;
  std::string expected_digest_;  // SHA-256 of "Bearer <api_key>": the key itself is not kept
};

}  // namespace payorch::vendor_sim
