#include "providers/registry.h"

#include <stdexcept>
#include <utility>

#include "providers/adyen/adyen_adapter.h"
#include "providers/alipay/alipay_adapter.h"
#include "providers/sim/sim_adapter.h"
#include "providers/stripe/stripe_adapter.h"
#include "providers/wechatpay/wechatpay_adapter.h"

namespace payorch::providers {

std::unique_ptr<Adapter> make_adapter(const config::Provider& provider,
                                      boost::asio::any_io_executor ex, net::HttpClient& client) {
  if (provider.adapter == "sim")
    return std::make_unique<sim::SimAdapter>(provider, std::move(ex), client);
  if (provider.adapter == "stripe")
    return std::make_unique<stripe::StripeAdapter>(provider, std::move(ex), client);
  if (provider.adapter == "adyen")
    return std::make_unique<adyen::AdyenAdapter>(provider, std::move(ex), client);
  if (provider.adapter == "alipay")
    return std::make_unique<alipay::AlipayAdapter>(provider, std::move(ex), client);
  if (provider.adapter == "wechatpay")
    return std::make_unique<wechatpay::WechatpayAdapter>(provider, std::move(ex), client);
  throw std::invalid_argument("provider \"" + provider.name + "\": unknown adapter \"" +
                              provider.adapter + "\"");
}

}  // namespace payorch::providers
