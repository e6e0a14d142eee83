// log::format: one logfmt line per event — bare values where they are safe, quoted and escaped
// where a space, quote, equals sign, backslash or control character could split or forge a
// field — and log::mask for payment source tokens.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "util/log.h"

using namespace payorch;

TEST_CASE("log::format: level, event, fields in order, msg last") {
  CHECK(log::format(log::Level::warn, "engine.cas_refused", "discarded",
                    {{"payment_id", "pay_01J"}, {"fence", std::int64_t{7}}, {"stale", true}}) ==
        "level=warn event=engine.cas_refused payment_id=pay_01J fence=7 stale=true msg=discarded");
  CHECK(log::format(log::Level::info, "sim.stopped", "", {}) == "level=info event=sim.stopped");
  CHECK(log::format(log::Level::alert, "x", "", {{"n", -3}, {"u", std::uint64_t{18446744073709551615ull}}}) ==
        "level=alert event=x n=-3 u=18446744073709551615");
  for (auto [level, name] : {std::pair{log::Level::debug, "debug"}, {log::Level::info, "info"},
                            {log::Level::warn, "warn"}, {log::Level::error, "error"},
                            {log::Level::alert, "alert"}})
    CHECK(log::to_string(level) == name);
}

TEST_CASE("log::format: values that could split a field are quoted and escaped") {
  auto one = [](std::string_view value) {
    return log::format(log::Level::info, "e", "", {{"v", value}}).substr(std::string("level=info event=e v=").size());
  };
  CHECK(one("plain-value_1.2:3/x") == "plain-value_1.2:3/x");
  CHECK(one("") == "\"\"");
  CHECK(one("two words") == "\"two words\"");
  CHECK(one("a=b") == "\"a=b\"");
  CHECK(one("say \"hi\"") == "\"say \\\"hi\\\"\"");
  CHECK(one("back\\slash") == "\"back\\\\slash\"");
  CHECK(one("line\nbreak\r\ttab") == "\"line\\nbreak\\r\\ttab\"");
  CHECK(one(std::string("nul\0bell\x07", 9)) == "\"nul\\x00bell\\x07\"");
  CHECK(one("del\x7f") == "\"del\\x7f\"");
  CHECK(one("caf\xc3\xa9") == "\"caf\xc3\xa9\"");  // UTF-8 kept, but quoted
  // A forged second line or field stays inside one quoted value.
  const std::string forged = log::format(log::Level::info, "e", "x\npayorchd level=alert event=forged", {});
  CHECK(forged.find('\n') == std::string::npos);
  CHECK(forged == "level=info event=e msg=\"x\\npayorchd level=alert event=forged\"");
}

TEST_CASE("log::format: fields assembled at run time read the same") {
  std::vector<log::Field> fields{{"reference", "ck_1"}, {"amount_minor", std::int64_t{1250}}};
  fields.emplace_back("status", "succeeded");
  CHECK(log::format(log::Level::info, "charge.created", "", fields) ==
        "level=info event=charge.created reference=ck_1 amount_minor=1250 status=succeeded");
}

TEST_CASE("log::mask: a payment source token shows its first four characters only") {
  CHECK(log::mask("tok_visa_4242424242424242") == "tok_…");
  CHECK(log::mask("tok_ok") == "tok_…");
  CHECK(log::mask("abcd") == "****");
  CHECK(log::mask("ab") == "**");
  CHECK(log::mask("") == "");
  const std::string line = log::format(log::Level::info, "e", "", {{"source", log::mask("tok_secret_value")}});
  CHECK(line.find("secret") == std::string::npos);
  CHECK(line == "level=info event=e source=\"tok_…\"");
}

TEST_CASE("log::set_node: every line written names the node after its fields, until it is cleared") {
  std::vector<std::string> lines;
  log::set_sink([&](std::string_view line) { lines.emplace_back(line); });
  log::set_node("node-a");
  log::info("engine.owner", "owner", {{"lease_owner", "node-a:7:x"}});
  log::set_node("");
  log::info("engine.owner", "owner");
  log::set_sink({});
  REQUIRE(lines.size() == 2);
  CHECK(lines[0] == "payorchd level=info event=engine.owner lease_owner=node-a:7:x node=node-a msg=owner\n");
  CHECK(lines[1] == "payorchd level=info event=engine.owner msg=owner\n");
}

TEST_CASE("log::set_level: lines below the level are dropped") {
  std::vector<std::string> lines;
  log::set_sink([&](std::string_view line) { lines.emplace_back(line); });
  log::set_level(log::Level::warn);
  log::info("a", "");
  log::debug("b", "");
  log::warn("c", "");
  log::alert("d", "");
  log::set_level(log::Level::debug);
  log::debug("e", "");
  log::set_level(log::Level::info);
  log::debug("f", "");
  log::set_sink({});
  REQUIRE(lines.size() == 3);
  CHECK(lines[0] == "payorchd level=warn event=c\n");
  CHECK(lines[1] == "payorchd level=alert event=d\n");
  CHECK(lines[2] == "payorchd level=debug event=e\n");
  CHECK(log::parse_level("warn") == log::Level::warn);
  CHECK(log::parse_level("debug") == log::Level::debug);
  CHECK_FALSE(log::parse_level("WARN"));
  CHECK_FALSE(log::parse_level("warning"));
  CHECK_FALSE(log::parse_level(""));
}

TEST_CASE("log::timestamp: RFC 3339 UTC with milliseconds") {
  using namespace std::chrono;
  const system_clock::time_point t{milliseconds{1'796'259'723'456}};
  CHECK(log::timestamp(t) == "2026-12-03T01:02:03.456Z");
  CHECK(log::timestamp(system_clock::time_point{milliseconds{7}}) == "1970-01-01T00:00:00.007Z");
}

TEST_CASE("log: the journal gets syslog priorities, only when JOURNAL_STREAM names stderr") {
  CHECK(log::journal_priority(log::Level::debug) == 7);
  CHECK(log::journal_priority(log::Level::info) == 6);
  CHECK(log::journal_priority(log::Level::warn) == 4);
  CHECK(log::journal_priority(log::Level::error) == 3);
  CHECK(log::journal_priority(log::Level::alert) == 1);
  CHECK(log::is_journal_stream("8:12345", 8, 12345));
  CHECK_FALSE(log::is_journal_stream(nullptr, 8, 12345));
  CHECK_FALSE(log::is_journal_stream("", 8, 12345));
  // Inherited by a child whose stderr was redirected elsewhere: another inode.
  CHECK_FALSE(log::is_journal_stream("8:12345", 8, 12346));
  CHECK_FALSE(log::is_journal_stream("9:12345", 8, 12345));
  for (const char* bad : {"8:", ":12345", "8", "8:12345:1", "8:12345x", "x8:12345", "-8:12345", "8 :12345"})
    CHECK_FALSE(log::is_journal_stream(bad, 8, 12345));
  CHECK(log::is_journal_stream("18446744073709551615:1", 18446744073709551615ull, 1));
}

TEST_CASE("log::ContextScope: a request's lines carry its request_id, tenant and operation_id, on its thread only") {
  std::vector<std::string> lines;
  log::set_sink([&](std::string_view line) { lines.emplace_back(line); });
  log::note_tenant("nobody");  // no context: nothing to note
  log::info("before", "");
  {
    log::Context ctx{"req-1", "", ""};
    log::ContextScope scope(ctx);
    log::info("unauthenticated", "");
    log::note_tenant("acme");
    CHECK(ctx.tenant == "acme");
    log::info("authenticated", "m", {{"operation_id", "op-1"}});
    log::info("own", "", {{"tenant", "globex"}});  // a field the line gives itself wins
    log::info("own_id", "", {{"tenant_id", "globex"}});
    log::note_operation("op-2");
    log::info("operation", "");
    {
      log::Context inner{"req-2", "", ""};
      log::ContextScope nested(inner);
      log::info("nested", "");  // a context of its own: none of the outer one's fields
    }
    log::info("restored", "");
  }
  log::info("after", "");
  log::set_sink({});
  REQUIRE(lines.size() == 9);
  CHECK(lines[0] == "payorchd level=info event=before\n");
  CHECK(lines[1] == "payorchd level=info event=unauthenticated request_id=req-1\n");
  CHECK(lines[2] == "payorchd level=info event=authenticated operation_id=op-1 request_id=req-1 tenant=acme msg=m\n");
  CHECK(lines[3] == "payorchd level=info event=own tenant=globex request_id=req-1\n");
  CHECK(lines[4] == "payorchd level=info event=own_id tenant_id=globex request_id=req-1\n");
  CHECK(lines[5] == "payorchd level=info event=operation request_id=req-1 tenant=acme operation_id=op-2\n");
  CHECK(lines[6] == "payorchd level=info event=nested request_id=req-2\n");
  CHECK(lines[7] == "payorchd level=info event=restored request_id=req-1 tenant=acme operation_id=op-2\n");
  CHECK(lines[8] == "payorchd level=info event=after\n");
}
