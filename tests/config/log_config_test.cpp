// The log: section (docs/configuration.md): log.level and log.access, their defaults, and the
// line and key path of every message about a bad value.
#include <doctest/doctest.h>

#include <string>

#include "config/config_fixture.h"

namespace payorch::config {

using test::check_error;
using test::errors_of;
using test::load_ok;
using test::valid_yaml;

TEST_CASE("config: log.level and log.access default to info and on") {
  const Config c = load_ok(valid_yaml);
  CHECK(c.log.level == log::Level::info);
  CHECK(c.log.access);
}

TEST_CASE("config: log.level and log.access are read") {
  for (const auto& [name, level] : {std::pair{"debug", log::Level::debug}, {"info", log::Level::info},
                                    {"warn", log::Level::warn}, {"error", log::Level::error}}) {
    const Config c = load_ok(valid_yaml + "log:\n  level: " + name + "\n  access: false\n");
    CHECK(c.log.level == level);
    CHECK_FALSE(c.log.access);
  }
  CHECK(load_ok(valid_yaml + "log: {access: true}\n").log.access);
}

TEST_CASE("config: a bad log.level or log.access names its line") {
  const std::string yaml = valid_yaml + "log:\n  level: verbose\n  access: yes-please\n";
  check_error(yaml, "level: verbose",
              "log.level: expected debug, info, warn or error, got \"verbose\"");
  check_error(yaml, "access: yes-please", "log.access: expected true or false, got \"yes-please\"");
  check_error(valid_yaml + "log:\n  level: alert\n", "level: alert", "log.level: expected debug");
  check_error(valid_yaml + "log:\n  colour: true\n", "colour:", "unknown key 'colour'");
  CHECK(errors_of(yaml).size() == 2);
}

}  // namespace payorch::config
