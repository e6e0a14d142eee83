// Callback delivery from the real payorch-vendor-sim to a local receiver: signatures, retries,
// duplicates, durability across a restart.
#include <doctest/doctest.h>

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <boost/json/parse.hpp>

#include "support/webhook_receiver.h"
#include "support/vendor_sim.h"

namespace {

using namespace payorch::test;
using namespace std::chrono_literals;

// Verifies Sim-Signature independently of the sim's code: t=<unix>,v1=<hex HMAC-SHA256>.
bool signature_valid(const ReceivedWebhook& cb, const std::string& secret) {
  const auto it = cb.headers.find("sim-signature");
  if (it == cb.headers.end()) return false;
  const std::string& header = it->second;
  const std::size_t comma = header.find(",v1=");
  if (!header.starts_with("t=") || comma == std::string::npos) return false;
  const std::string t = header.substr(2, comma - 2);
  const std::string given = header.substr(comma + 4);
  const std::string data = t + "." + cb.body;
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  HMAC(EVP_sha256(), secret.data(), static_cast<int>(secret.size()),
       reinterpret_cast<const unsigned char*>(data.data()), data.size(), mac, &len);
  std::string hex;
  char buf[3];
  for (unsigned int i = 0; i < len; ++i) {
    std::snprintf(buf, sizeof buf, "%02x", mac[i]);
    hex += buf;
  }
  const long long age = static_cast<long long>(std::time(nullptr)) - std::stoll(t);
  return hex == given && age >= -5 && age <= 60;  // signed with the wall clock, just now
}

// Not the sim's default secret: the signatures prove --callback-secret is what signs.
constexpr const char* callback_secret = "sim-test-callback-secret";

std::vector<std::string> callback_args(const WebhookReceiver& receiver) {
  return {"--callback-url", receiver.url("/v1/callbacks/sim"), "--callback-secret", callback_secret,
          "--callback-initial-backoff", "100ms", "--callback-max-backoff", "400ms"};
}

boost::json::object body_of(const ReceivedWebhook& cb) {
  return boost::json::parse(cb.body).as_object();
}

}  // namespace

TEST_CASE("sim callbacks: delivered, signed, shaped as docs/contract.md §5") {
  WebhookReceiver receiver;
  VendorSim sim(callback_args(receiver));
  const auto charge = sim.post_charge("ck_cb1", charge_body("ck_cb1"));
  REQUIRE(charge.status == 200);
  REQUIRE_MESSAGE(receiver.wait_for(1), sim.log_tail());
  const auto got = receiver.received();
  REQUIRE(got.size() == 1);
  CHECK(got[0].target == "/v1/callbacks/sim");
  CHECK(signature_valid(got[0], callback_secret));
  CHECK_FALSE(signature_valid(got[0], "another-secret"));
  const auto body = body_of(got[0]);
  CHECK(std::string(body.at("id").as_string()).starts_with("evt_"));
  CHECK(body.at("type").as_string() == "charge.succeeded");
  CHECK(body.at("created").is_int64());
  CHECK(body.at("data") == charge.json());
  // Acknowledged: never sent again.
  CHECK_FALSE(receiver.wait_for(2, 500ms));
}

TEST_CASE("sim callbacks: pending then succeeded, each announced") {
  WebhookReceiver receiver;
  auto args = callback_args(receiver);
  args.insert(args.end(), {"--pending-delay", "300ms"});
  VendorSim sim(args);
  REQUIRE(sim.post_charge("ck_cbp", charge_body("ck_cbp", "tok_pending")).status == 200);
  REQUIRE_MESSAGE(receiver.wait_for(2, 5s), sim.log_tail());
  const auto got = receiver.received();
  CHECK(body_of(got[0]).at("type").as_string() == "charge.pending");
  CHECK(body_of(got[1]).at("type").as_string() == "charge.succeeded");
  CHECK(body_of(got[1]).at("data").at("status").as_string() == "succeeded");
  CHECK(body_of(got[0]).at("id") != body_of(got[1]).at("id"));
  CHECK(signature_valid(got[1], callback_secret));
}

TEST_CASE("sim callbacks: a 500 from the receiver is retried with the same event") {
  WebhookReceiver receiver;
  receiver.script({500, 503});
  VendorSim sim(callback_args(receiver));
  REQUIRE(sim.post_charge("ck_cbr", charge_body("ck_cbr", "tok_decline")).status == 200);
  REQUIRE_MESSAGE(receiver.wait_for(3, 5s), sim.log_tail());
  const auto got = receiver.received();
  CHECK(body_of(got[0]).at("id") == body_of(got[2]).at("id"));
  CHECK(got[0].body == got[2].body);  // the same bytes, signed afresh
  CHECK(signature_valid(got[2], callback_secret));
  CHECK(body_of(got[2]).at("type").as_string() == "charge.declined");
  CHECK(eventually([&] {
    const auto q = sim.control("GET", "/_sim/callbacks").json().at("callbacks").at(0);
    return q.at("state").as_string() == "delivered" && q.at("attempts").as_int64() == 3;
  }));
  CHECK_FALSE(receiver.wait_for(4, 500ms));
}

TEST_CASE("sim callbacks: duplicates when asked") {
  WebhookReceiver receiver;
  VendorSim sim(callback_args(receiver));
  REQUIRE(sim.control("POST", "/_sim/config", R"({"duplicate_callbacks":true})").status == 200);
  REQUIRE(sim.post_charge("ck_dup", charge_body("ck_dup")).status == 200);
  REQUIRE_MESSAGE(receiver.wait_for(2), sim.log_tail());
  const auto got = receiver.received();
  CHECK(got[0].body == got[1].body);
  CHECK_FALSE(receiver.wait_for(3, 500ms));
}

TEST_CASE("sim callbacks: disabled, then none queued meanwhile") {
  WebhookReceiver receiver;
  auto args = callback_args(receiver);
  args.push_back("--no-callbacks");
  VendorSim sim(args);
  REQUIRE(sim.post_charge("ck_off", charge_body("ck_off")).status == 200);
  REQUIRE(sim.control("POST", "/_sim/config", R"({"callbacks_enabled":true})").status == 200);
  REQUIRE(sim.post_charge("ck_on", charge_body("ck_on")).status == 200);
  REQUIRE(receiver.wait_for(1));
  CHECK_FALSE(receiver.wait_for(2, 400ms));
  CHECK(body_of(receiver.received()[0]).at("data").at("reference").as_string() == "ck_on");
}

TEST_CASE("sim callbacks: the queue is durable across kill -9") {
  WebhookReceiver receiver;
  receiver.script({}, 500);  // refuse everything for now
  VendorSim sim(callback_args(receiver));
  REQUIRE(sim.post_charge("ck_dur", charge_body("ck_dur")).status == 200);
  REQUIRE(receiver.wait_for(1));
  sim.kill9();
  receiver.script({}, 200);
  const std::size_t before = receiver.received().size();
  sim.restart();
  REQUIRE_MESSAGE(receiver.wait_for(before + 1, 5s), sim.log_tail());
  const auto got = receiver.received();
  CHECK(body_of(got.back()).at("data").at("reference").as_string() == "ck_dur");
  CHECK(body_of(got.back()).at("id") == body_of(got.front()).at("id"));
  CHECK(eventually([&] {
    return sim.control("GET", "/_sim/callbacks").json().at("callbacks").at(0).at("state").as_string() ==
           "delivered";
  }));
}

TEST_CASE("sim callbacks: given up past the horizon") {
  WebhookReceiver receiver;
  receiver.script({}, 500);
  auto args = callback_args(receiver);
  args.insert(args.end(), {"--callback-horizon", "300ms"});
  VendorSim sim(args);
  REQUIRE(sim.post_charge("ck_hz", charge_body("ck_hz")).status == 200);
  CHECK(eventually(
      [&] {
        return sim.control("GET", "/_sim/callbacks").json().at("callbacks").at(0).at("state").as_string() ==
               "expired";
      },
      5s));
  const std::size_t n = receiver.received().size();
  CHECK(n >= 2);
  CHECK_FALSE(receiver.wait_for(n + 1, 400ms));
}

TEST_CASE("sim callbacks: refunds are announced, signed, with the refund as data") {
  WebhookReceiver receiver;
  VendorSim sim(callback_args(receiver));
  const auto charge = sim.post_charge("ck_rcb", charge_body("ck_rcb", "tok_ok", 1000));
  REQUIRE(charge.status == 200);
  REQUIRE(receiver.wait_for(1));
  const std::string ch(charge.json().at("id").as_string());
  const auto ok = sim.post_refund("rk_cb1", refund_body("rk_cb1", ch, 600));
  const auto declined = sim.post_refund("rk_cb2", refund_body("rk_cb2", ch, 401));
  REQUIRE(ok.status == 200);
  REQUIRE(declined.status == 200);
  REQUIRE_MESSAGE(receiver.wait_for(3), sim.log_tail());
  const auto got = receiver.received();
  CHECK(signature_valid(got[1], callback_secret));
  CHECK(signature_valid(got[2], callback_secret));
  const auto first = body_of(got[1]);
  const auto second = body_of(got[2]);
  CHECK(std::string(first.at("id").as_string()).starts_with("evt_"));
  CHECK(first.at("type").as_string() == "refund.succeeded");
  CHECK(first.at("data") == ok.json());
  CHECK(second.at("type").as_string() == "refund.declined");
  CHECK(second.at("data") == declined.json());
  CHECK(second.at("data").at("decline_code").as_string() == "exceeds_charge");
  CHECK(eventually([&] {
    const auto q = sim.control("GET", "/_sim/callbacks").json().at("callbacks");
    return q.as_array().size() == 3 && q.at(2).at("state").as_string() == "delivered" &&
           q.at(2).at("refund_id") == declined.json().at("id") && q.at(2).at("charge_id").as_string() == ch;
  }));
  CHECK_FALSE(receiver.wait_for(4, 500ms));
}

TEST_CASE("sim callbacks: a pending refund, then succeeded; retried like a charge's") {
  WebhookReceiver receiver;
  auto args = callback_args(receiver);
  args.insert(args.end(), {"--pending-delay", "300ms"});
  VendorSim sim(args);
  const auto charge = sim.post_charge("ck_rcbp", charge_body("ck_rcbp", "tok_pending"));
  REQUIRE(charge.status == 200);
  REQUIRE_MESSAGE(receiver.wait_for(2, 5s), sim.log_tail());  // charge.pending, charge.succeeded
  receiver.script({500});
  const std::string ch(charge.json().at("id").as_string());
  const auto refund = sim.post_refund("rk_cbp", refund_body("rk_cbp", ch, 250));
  REQUIRE(refund.status == 200);
  CHECK(refund.json().at("status").as_string() == "pending");
  // refund.pending refused once and sent again, then refund.succeeded.
  REQUIRE_MESSAGE(receiver.wait_for(5, 5s), sim.log_tail());
  const auto got = receiver.received();
  std::vector<std::string> pending_bodies;
  std::optional<ReceivedWebhook> succeeded;
  for (std::size_t i = 2; i < got.size(); ++i) {
    const auto type = body_of(got[i]).at("type").as_string();
    if (type == "refund.pending") pending_bodies.push_back(got[i].body);
    if (type == "refund.succeeded") succeeded = got[i];
  }
  REQUIRE(pending_bodies.size() == 2);
  CHECK(pending_bodies[0] == pending_bodies[1]);  // the same event, sent again
  REQUIRE(succeeded);
  CHECK(body_of(*succeeded).at("data").at("status").as_string() == "succeeded");
  CHECK(body_of(*succeeded).at("data").at("id") == refund.json().at("id"));
  CHECK(signature_valid(*succeeded, callback_secret));
}
