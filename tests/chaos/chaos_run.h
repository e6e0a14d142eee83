#pragma once
// One chaos run, whatever the database and the vendor (the sim or an emulator: chaos_vendor.h):
// client threads send the seeded load to the payorchd nodes while the rounds of chaos_plan.h
// queue vendor faults, restart the database server (PostgreSQL) and kill -9 a node at every
// round's end (and the vendor now and then), starting each again; then the faults stop and the
// run waits (bounded) for every payment to settle. The checker (chaos_checker.h) is run on what
// this leaves, and report() prints both.
#include <cstdint>
#include <string>
#include <vector>

#include "chaos/chaos_checker.h"
#include "chaos/chaos_plan.h"
#include "chaos/chaos_vendor.h"

namespace payorch::test {
class Daemon;
class PostgresCluster;
}  // namespace payorch::test

namespace payorch::chaos {

// The processes a run acts on. Every node listens on a fixed port (its config's), so that
// clients and the vendor's callbacks find it again after a restart.
struct Target {
  Vendor* vendor = nullptr;  // the sim or an emulator (chaos_vendor.h)
  const VendorProfile* profile = &sim_profile();  // the sources the load sends it
  std::string provider = "sim";  // the provider payorchd routes the load to (the views' "provider")
  std::vector<test::Daemon*> nodes = {};     // on one database
  test::PostgresCluster* database = nullptr;  // restarted where a round plans it; else none
  const RecordSource* payorch = nullptr;     // the nodes' database
  const RecordSource* ledger = nullptr;      // the vendor's ledger
};

// What a run did.
struct Tally {
  int kills = 0, restarts = 0, faults_queued = 0, control_errors = 0;
  int sim_restarts = 0;  // of the vendor process, whichever it is
  int database_restarts = 0;
  double database_down_s = 0;  // summed over the restarts, stop and start included
  std::vector<int> kills_per_node;
  double load_s = 0, settle_s = 0;
  std::int64_t unsettled_at_end = 0;  // payments or charges unsettled when the load stopped
  std::string answers;  // how requests were answered, by kind ("new 201 12, 503 (retried) 3, ...")
};

// Runs the load and the rounds, then settles. Throws if a process or the database does not
// come back (the clients are stopped first).
ClientHistory run(const Params& params, const std::vector<Round>& rounds, Target& target, Tally& tally);

// The report block: the plan, the processes, the load, the checker's counts and findings, a
// verdict, a one-line summary ("chaos seed=... lost=0 ...") and a "chaos-json {...}" line.
// `extra`: lines of the caller's own ("exposure     payorchd check-exposure: ok"), each ending
// in a newline.
// `vendor`: the vendor's name in the report ("sim").
std::string report(const std::string& title, const Params& params, const Tally& tally,
                   const ClientHistory& history, const Report& checked, std::int64_t error_lines,
                   const std::string& extra = {}, const std::string& vendor = "sim");

}  // namespace payorch::chaos
