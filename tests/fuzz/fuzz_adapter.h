#pragma once
// The adapter a callback fuzz target checks, built as the daemon builds it from its
// configuration (providers::make_adapter), once for the whole run and never destroyed: no
// teardown order to get wrong. Its calls are never made; only verify_and_parse runs.
#include <boost/asio/io_context.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "config/config.h"
#include "net/http_client.h"
#include "providers/adapter.h"
#include "providers/registry.h"

namespace payorch::fuzz {

// `adapter` names the dialect ("sim", "stripe"); `secret` and `tolerance_s` are its callback
// settings. The first call's arguments hold for the run.
inline const providers::Adapter& callback_adapter(const std::string& adapter, const std::string& secret,
                                                  std::int64_t tolerance_s) {
  struct Holder {
    boost::asio::io_context io;
    net::HttpClient client{io.get_executor()};
    std::unique_ptr<providers::Adapter> adapter;
    Holder(const std::string& name, const std::string& secret, std::int64_t tolerance_s) {
      config::Provider p;
      p.name = name;
      p.adapter = name;
      p.base_url = "http://127.0.0.1:9";
      p.api_key = "sk_fuzz";
      p.callback.secret = secret;
      p.callback.tolerance = std::chrono::seconds(tolerance_s);
      adapter = providers::make_adapter(p, io.get_executor(), client);
    }
  };
  static Holder* h = new Holder(adapter, secret, tolerance_s);
  return *h->adapter;
}

}  // namespace payorch::fuzz
