// The currencies payorch accepts: ISO 4217 List One, alphabetic codes of currencies in
// circulation, as of the 2025 amendments (ZWG replaced ZWL in 2024; XCG, the Caribbean
// guilder, arrived in 2025 while ANG stays valid until its withdrawal on 2026-03-31).
//
// Deliberately absent: fund and unit-of-account codes (BOV CHE CHW CLF COU MXV USN UYI UYW),
// supranational units (XBA XBB XBC XBD XDR XSU XUA), precious metals (XAG XAU XPD XPT), the
// test and "no currency" codes (XTS XXX), and withdrawn codes (HRK CUC SLL ZWL VEF MRO STD …).
// A payment in any of those is a mistake no vendor would settle.
//
// Keep the list sorted: valid_currency() binary-searches it (a test checks the order).
#include <algorithm>
#include <array>
#include <span>
#include <string_view>

#include "core/intent.h"

namespace payorch {
namespace {

constexpr auto active_currencies = std::to_array<std::string_view>({
    "AED", "AFN", "ALL", "AMD", "ANG", "AOA", "ARS", "AUD", "AWG", "AZN", "BAM", "BBD", "BDT",
    "BGN", "BHD", "BIF", "BMD", "BND", "BOB", "BRL", "BSD", "BTN", "BWP", "BYN", "BZD", "CAD",
    "CDF", "CHF", "CLP", "CNY", "COP", "CRC", "CUP", "CVE", "CZK", "DJF", "DKK", "DOP", "DZD",
    "EGP", "ERN", "ETB", "EUR", "FJD", "FKP", "GBP", "GEL", "GHS", "GIP", "GMD", "GNF", "GTQ",
    "GYD", "HKD", "HNL", "HTG", "HUF", "IDR", "ILS", "INR", "IQD", "IRR", "ISK", "JMD", "JOD",
    "JPY", "KES", "KGS", "KHR", "KMF", "KPW", "KRW", "KWD", "KYD", "KZT", "LAK", "LBP", "LKR",
    "LRD", "LSL", "LYD", "MAD", "MDL", "MGA", "MKD", "MMK", "MNT", "MOP", "MRU", "MUR", "MVR",
    "MWK", "MXN", "MYR", "MZN", "NAD", "NGN", "NIO", "NOK", "NPR", "NZD", "OMR", "PAB", "PEN",
    "PGK", "PHP", "PKR", "PLN", "PYG", "QAR", "RON", "RSD", "RUB", "RWF", "SAR", "SBD", "SCR",
    "SDG", "SEK", "SGD", "SHP", "SLE", "SOS", "SRD", "SSP", "STN", "SVC", "SYP", "SZL", "THB",
    "TJS", "TMT", "TND", "TOP", "TRY", "TTD", "TWD", "TZS", "UAH", "UGX", "USD", "UYU", "UZS",
    "VED", "VES", "VND", "VUV", "WST", "XAF", "XCD", "XCG", "XOF", "XPF", "YER", "ZAR", "ZMW",
    "ZWG",
});

}  // namespace

bool valid_currency(std::string_view s) {
  return std::binary_search(active_currencies.begin(), active_currencies.end(), s);
}

std::span<const std::string_view> currency_codes() { return active_currencies; }

}  // namespace payorch
