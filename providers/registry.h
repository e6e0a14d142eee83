#pragma once
// Builds the adapter a provider's config names (config::Provider::adapter).
#include <boost/asio/any_io_executor.hpp>

#include <memory>

#include "config/config.h"
#include "net/http_client.h"
#include "providers/adapter.h"

namespace payorch::providers {

// `client` must outlive the adapter; results are delivered on `ex`. Throws
// std::invalid_argument for an adapter name it does not know (check-config rejects those
// first, so this is a startup error).
std::unique_ptr<Adapter> make_adapter(const config::Provider& provider,
                                      boost::asio::any_io_executor ex, net::HttpClient& client);

}  // namespace payorch::providers
