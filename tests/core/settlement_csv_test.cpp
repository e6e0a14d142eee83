// The settlement file parser on its own: the header, the lines it skips, RFC 4180 quoting within
// a line, every rule of a row, and the written-back form of a row.
#include <doctest/doctest.h>

#include <string>

#include "core/settlement_csv.h"

using namespace payorch;

namespace {

const std::string header = std::string(settlement_header) + "\n";

SettlementFile parse_rows(const std::string& rows) { return parse_settlement(header + rows); }

// The one error of a one-row file.
std::string error_of(const std::string& row) {
  const auto file = parse_rows(row + "\n");
  REQUIRE(file.rows.empty());
  REQUIRE(file.errors.size() == 1);
  CHECK(file.errors[0].line == 2);
  return file.errors[0].message;
}

}  // namespace

TEST_CASE("settlement parse: quoting, BOM, blank lines") {
  auto file = parse_settlement(
      "\xEF\xBB\xBFReference,Status,Amount_Minor,Currency,Vendor_Reference\n"
      "\"ck_1\",succeeded,5,EUR,\"a \"\"quoted\"\" ref\"\n"
      "\n"
      "ck_2 , failed , 7 , GBP ,\n"
      "\"ck_3,succeeded,5,EUR,x\n"
      "ck_4,succeeded,0,EUR,x\n");
  REQUIRE_FALSE(file.header_error);
  CHECK(file.data_rows == 4);
  REQUIRE(file.rows.size() == 2);
  CHECK(file.rows[0].vendor_reference == "a \"quoted\" ref");
  CHECK(file.rows[1].reference == "ck_2");
  CHECK(file.rows[1].status == SettlementStatus::failed);
  CHECK(file.rows[1].amount_minor == 7);
  CHECK_FALSE(file.rows[1].vendor_reference);
  CHECK(file.rows[1].line == 4);
  REQUIRE(file.errors.size() == 2);
  CHECK(file.errors[0].line == 5);
  CHECK(file.errors[1].line == 6);
}

TEST_CASE("settlement parse: the header is the first line, in any case; anything else reads nothing") {
  CHECK(parse_settlement("").header_error->find("the file is empty") != std::string::npos);
  const auto other = parse_settlement("reference,status,amount,currency\nck_1,succeeded,1,EUR,\n");
  REQUIRE(other.header_error);
  CHECK(other.header_error->find("line 1: expected the header") != std::string::npos);
  CHECK(other.rows.empty());
  CHECK(other.errors.empty());
  CHECK(other.data_rows == 0);
  // A blank first line is not skipped: the header must come first.
  CHECK(parse_settlement("\n" + header).header_error);
  // Quoted header names and CRLF are still the header.
  const auto quoted = parse_settlement(
      "\"REFERENCE\",status,amount_minor,currency,vendor_reference\r\nck_1,succeeded,1,EUR,\r\n");
  REQUIRE_FALSE(quoted.header_error);
  CHECK(quoted.rows.size() == 1);
  // The header alone, with or without its line end: a file of no rows.
  for (const std::string& text : {std::string(settlement_header), header}) {
    const auto empty = parse_settlement(text);
    CHECK_FALSE(empty.header_error);
    CHECK(empty.data_rows == 0);
  }
}

TEST_CASE("settlement parse: blank lines are skipped, whitespace-only and CRLF ones too; a lone CR is not blank") {
  const auto file = parse_rows("\n \t \r\n\r\nck_1,succeeded,1,EUR,\n\r\r\n");
  CHECK(file.data_rows == 2);
  REQUIRE(file.rows.size() == 1);
  CHECK(file.rows[0].line == 5);
  REQUIRE(file.errors.size() == 1);
  CHECK(file.errors[0].line == 6);
}

TEST_CASE("settlement parse: quoting within a line") {
  const auto file = parse_rows(
      "\"ck,1\",succeeded,1,EUR,\"\"\n"
      "  \" spaced \"  ,succeeded,1,EUR,  v  \n");
  REQUIRE(file.rows.size() == 2);
  CHECK(file.rows[0].reference == "ck,1");
  CHECK_FALSE(file.rows[0].vendor_reference);  // "" is no vendor reference
  CHECK(file.rows[1].reference == " spaced ");  // quoted: kept as written
  CHECK(file.rows[1].vendor_reference == "v");  // unquoted: trimmed
  CHECK(error_of("\"ck_1,succeeded,1,EUR,") == "unterminated quoted field");
  CHECK(error_of("\"ck_1\"x,succeeded,1,EUR,") == "text after a closing quote");
  CHECK(error_of("ck\"1,succeeded,1,EUR,") == "a quote inside an unquoted field");
}

TEST_CASE("settlement parse: five columns, and every problem of a row in one error") {
  CHECK(error_of("ck_1,succeeded,1,EUR") == "expected 5 columns (" + std::string(settlement_header) + "), found 4");
  CHECK(error_of("ck_1,succeeded,1,EUR,v,extra").find("found 6") != std::string::npos);
  CHECK(error_of(",refunded,0,eur,") ==
        "reference is empty; status 'refunded' is not succeeded, failed or declined; amount_minor '0' "
        "is not an integer from 1 to 9007199254740991; currency 'eur' is not an upper-case ISO 4217 code");
}

TEST_CASE("settlement parse: status in any case, declined reads as failed") {
  const auto file = parse_rows("a,SUCCEEDED,1,EUR,\nb,Declined,1,EUR,\nc,failed,1,EUR,\n");
  REQUIRE(file.rows.size() == 3);
  CHECK(file.rows[0].status == SettlementStatus::succeeded);
  CHECK(file.rows[0].status_text == "succeeded");
  CHECK(file.rows[1].status == SettlementStatus::failed);
  CHECK(file.rows[1].status_text == "declined");
  CHECK(file.rows[2].status == SettlementStatus::failed);
}

TEST_CASE("settlement parse: amount_minor is 1 to 2^53 - 1 in plain digits") {
  const auto file = parse_rows("a,succeeded,1,EUR,\nb,succeeded,9007199254740991,EUR,\n");
  REQUIRE(file.rows.size() == 2);
  CHECK(file.rows[0].amount_minor == 1);
  CHECK(file.rows[1].amount_minor == 9'007'199'254'740'991);
  for (const char* amount : {"0", "9007199254740992", "99999999999999999", "+5", "-1", "1.00", "1e3", "", "1 000"})
    CHECK_MESSAGE(error_of(std::string("a,succeeded,") + amount + ",EUR,").find("amount_minor") != std::string::npos,
                  amount);
}

TEST_CASE("settlement parse: currency is three upper-case letters") {
  for (const char* currency : {"eur", "EU", "EURO", "E1R", ""})
    CHECK_MESSAGE(error_of(std::string("a,succeeded,1,") + currency + ",").find("currency") != std::string::npos,
                  currency);
}

TEST_CASE("settlement rows written back read as the same rows") {
  const auto file = parse_rows(
      "plain,succeeded,1,EUR,ch_1\n"
      "\"a,b\",declined,2,USD,\"say \"\"hi\"\"\"\n"
      "\" lead\",failed,3,GBP,\"trail\t\"\n"
      "\"cr\rin\",succeeded,4,EUR,\n");
  REQUIRE(file.errors.empty());
  REQUIRE(file.rows.size() == 4);
  CHECK(format_settlement_row(file.rows[0]) == "plain,succeeded,1,EUR,ch_1,charge");
  CHECK(format_settlement_row(file.rows[1]) == "\"a,b\",declined,2,USD,\"say \"\"hi\"\"\",charge");
  for (const auto& row : file.rows) {
    const auto again =
        parse_settlement(std::string(settlement_kind_header) + "\n" + format_settlement_row(row) + "\n");
    REQUIRE(again.rows.size() == 1);
    const auto& back = again.rows[0];
    CHECK(back.reference == row.reference);
    CHECK(back.status == row.status);
    CHECK(back.status_text == row.status_text);
    CHECK(back.amount_minor == row.amount_minor);
    CHECK(back.currency == row.currency);
    CHECK(back.vendor_reference == row.vendor_reference);
    CHECK(back.kind == row.kind);
  }
}

TEST_CASE("settlement kind: an optional last column, charge or refund; without it every row is a charge") {
  for (const auto& row : parse_rows("ck_1,succeeded,1,EUR,ch_1\n").rows) CHECK(row.kind == SettlementKind::charge);
  const auto file = parse_settlement(
      "Reference,Status,Amount_Minor,Currency,Vendor_Reference,KIND\n"
      "ck_1,succeeded,1,EUR,ch_1,charge\n"
      "ck_2,succeeded,1,EUR,rf_1,Refund\n"
      "ck_3,succeeded,1,EUR,rf_2,payout\n"
      "ck_4,succeeded,1,EUR,rf_3\n"
      "ck_5,succeeded,1,EUR,rf_4,\n");
  REQUIRE_FALSE(file.header_error);
  CHECK(file.data_rows == 5);
  REQUIRE(file.rows.size() == 2);
  CHECK(file.rows[0].kind == SettlementKind::charge);
  CHECK(file.rows[1].kind == SettlementKind::refund);
  REQUIRE(file.errors.size() == 3);
  CHECK(file.errors[0].line == 4);
  CHECK(file.errors[0].message == "kind 'payout' is not charge or refund");
  CHECK(file.errors[1].message ==
        "expected 6 columns (" + std::string(settlement_kind_header) + "), found 5");
  CHECK(file.errors[2].message == "kind '' is not charge or refund");
  // A kind column anywhere but last is another header.
  CHECK(parse_settlement("kind,reference,status,amount_minor,currency,vendor_reference\n").header_error);
  const auto written = parse_settlement(std::string(settlement_kind_header) + "\n" +
                                        format_settlement_row(file.rows[1]) + "\n");
  REQUIRE(written.rows.size() == 1);
  CHECK(written.rows[0].kind == SettlementKind::refund);
}

TEST_CASE("settlement parse: a file that is not UTF-8 is refused whole, naming the line") {
  // A reference no JSON answer or case evidence could carry: nothing of the file is read.
  const auto file = parse_rows("ck_1,succeeded,5,EUR,\nref\xFF\xFE,succeeded,5,EUR,\n");
  REQUIRE(file.header_error);
  CHECK(*file.header_error == "line 3: not valid UTF-8 (byte 4 of the line); nothing was read");
  CHECK(file.rows.empty());
  CHECK(file.errors.empty());
  const auto vendor = parse_settlement("\xEF\xBB\xBF" + header + "ck_1,succeeded,5,EUR,\xC3(\n");
  REQUIRE(vendor.header_error);
  CHECK(vendor.header_error->starts_with("line 2: not valid UTF-8 (byte 22 of the line)"));
  // UTF-8 beyond ASCII is read as written.
  const auto fine = parse_rows("caf\xC3\xA9,succeeded,5,EUR,\xE6\x94\xAF\n");
  REQUIRE_FALSE(fine.header_error);
  REQUIRE(fine.rows.size() == 1);
  CHECK(fine.rows[0].reference == "caf\xC3\xA9");
}

