#include "providers/registry.h"

#include <doctest/doctest.h>

#include <boost/asio/io_context.hpp>

#include <stdexcept>

#include "net/client_fixture.h"

TEST_CASE("make_adapter builds sim and stripe and refuses an unknown adapter") {
  boost::asio::io_context ioc;
  payorch::net::HttpClient client(ioc.get_executor(), payorch::test::test_options());
  payorch::config::Provider provider;
  provider.name = "main";
  provider.adapter = "sim";
  provider.base_url = "http://127.0.0.1:9";
  CHECK(payorch::providers::make_adapter(provider, ioc.get_executor(), client) != nullptr);
  provider.adapter = "stripe";
  CHECK(payorch::providers::make_adapter(provider, ioc.get_executor(), client) != nullptr);
  provider.adapter = "paypal";
  CHECK_THROWS_AS(payorch::providers::make_adapter(provider, ioc.get_executor(), client),
                  std::invalid_argument);
}
