#pragma once
// The simulation (dst/simulation.h) as one class whose parts live by role, in the manner of
// TigerBeetle's testing/cluster/: the profile a seed draws (profile.h), the workload, the
// network, the vendor model and the checker each in their own file, the payorch process and
// the event loop in simulation.cpp. Every decision is drawn from the one Rng, in the order the
// events run: the same seed replays the same run.
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <queue>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "core/clock.h"
#include "core/intent.h"
#include "core/risk.h"
#include "core/seeded_random.h"
#include "core/state_machine.h"
#include "dst/database.h"
#include "dst/profile.h"
#include "dst/simulation.h"
#include "engine/steps.h"
#include "providers/adapter.h"
#include "store/callbacks.h"
#include "store/intake.h"
#include "store/store.h"

namespace payorch::dst {

using providers::VendorResult;

struct Charge {
  enum class Status { pending, succeeded, declined } status = Status::pending;
  std::string key;
  providers::ChargeRequest request;
  UnixMillis first_seen = 0;
  std::string reference;
  bool forgotten = false;
  bool closed = false;  // closed by payorch's close while unpaid: no payment can follow
};

// A refund at the vendor (docs/refunds.md): keyed by the refund's own client_key, of a charge of
// the ledger, decided at once (declined when the charge is not succeeded or has too little left).
struct VendorRefund {
  std::string key;
  providers::RefundRequest request;
  std::size_t charge = 0;  // index in the ledger
  bool succeeded = false;
  std::string decline_code;
  std::string reference;
  UnixMillis committed_at = 0;
};

// A refund call the vendor received, with what payorch had committed of its payment then.
struct RefundCall {
  std::string refund_key;
  std::string payment_id;
  bool payment_succeeded = false;
};

struct Request {  // one vendor call on the wire
  engine::Call call;
  int engine = 0;
  std::uint64_t incarnation = 0;
  UnixMillis sent_at = 0;
  bool answered = false;
  VendorResult result;
};

struct IntakeOp {
  std::string tenant;
  Intent intent;
  std::string digest;
  bool acked = false;
  std::string payment_id;
};

// A client's refund request of an intake's payment (POST /v1/payments/{op}/refunds).
struct RefundOp {
  std::size_t payment = 0;  // index in intakes_
  RefundIntent intent;
  bool acked = false;
  store::RefundIntakeOutcome::Kind answer = store::RefundIntakeOutcome::Kind::created;
  std::string refund_id;  // created or replayed
};

struct Delivery {  // one vendor callback (its event id is the dedup key)
  std::string event_id;
  std::string key;
  bool about_refund = false;
  store::CallbackStatus status = store::CallbackStatus::pending;
  std::int64_t amount = 0;
  std::string currency;
  std::string reference;
};

enum class Kind { intake, refund_intake, replay, conflict, vendor_receive, vendor_commit, vendor_decide, vendor_reverse, response, timeout, record, callback, operator_pass };

struct Event {
  UnixMillis at;
  std::uint64_t seq;
  Kind kind;
  std::size_t index;
  bool operator>(const Event& o) const { return at != o.at ? at > o.at : seq > o.seq; }
};

enum class TxnEnd { committed, crashed_before_commit, crashed_after_commit };

class Simulation {
public:
  explicit Simulation(const Options& o);
  ~Simulation();
  Result run();

private:
  struct EngineRt {
    std::string owner;
    UnixMillis next_poll = 0;
    int in_flight = 0;
  };

  // ---- the payorch process (simulation.cpp): transactions, crashes, the engines, the event
  // loop

  void step(std::string_view what, std::uint64_t detail = 0);
  void violation(const std::string& what);
  void schedule(UnixMillis at, Kind kind, std::size_t index) { queue_.push(Event{at, ++seq_, kind, index}); }
  void new_incarnation();

  // The process dies: every connection is closed without committing, every in-memory thing is
  // gone (calls on the wire stay on the wire: the vendor is another process). It restarts at
  // once with new lease owners.
  void crash();
  bool faults_on() const { return !settling_; }

  // Runs `body` in one transaction, as the daemon's store would; may crash before or after the
  // commit (faults on). Checks the invariants after a commit.
  TxnEnd transact(const std::string& what, const std::function<void(store::Tx&)>& body, bool operator_resolution = false);
  void poll(std::size_t e);
  // Whether a claim round of at most `max` payments would claim any now: the store's own claim
  // (store::Tx::claim_due), rolled back.
  bool anything_due(int max);

  // When the next claim could find something; far away when nothing is pending.
  UnixMillis next_due();
  void on_record(std::size_t i);
  // Checks what a committed transaction reported for a vendor-side fence (stats.fences).
  void check_fences(const std::vector<engine::FenceCall>& fences);
  bool settled();
  void loop();

  // ---- the workload (workload.cpp): clients' intakes, replays and conflicting reuses; the
  // operator

  void plan_load();
  store::IntakeRequest intake_request(const IntakeOp& op) const;
  void on_intake(std::size_t i);
  void on_replay(std::size_t i, bool conflict);
  void plan_refunds(std::size_t payment, UnixMillis intake_at);
  void on_refund_intake(std::size_t i);
  void on_operator_pass();

  // ---- the network (network.cpp): calls on the wire and their answers, timeouts, paused
  // workers, callback deliveries

  void send(std::size_t e, const engine::Call& call);
  void answer_later(std::size_t i, VendorResult result);
  void on_response(std::size_t i, bool timed_out);
  void on_callback(std::size_t k);

  // ---- the vendor (vendor_model.cpp): its ledger, keys that expire, faults, callbacks

  void expire_keys();
  VendorResult answer_for(const Charge& c) const;
  static bool same_params(const providers::ChargeRequest& a, const providers::ChargeRequest& b);
  void commit_charge(const providers::ChargeRequest& req, std::optional<std::size_t> answer_to);
  void on_vendor_receive(std::size_t i);
  // A close (the vendor-side fence of a confirmed close): closes an unpaid order, refuses a
  // paid one.
  void on_vendor_close(std::size_t i);
  bool lookup_answered(std::size_t i, const std::string& key);
  bool searchable(UnixMillis committed_at);
  void on_vendor_commit(std::size_t i);
  void on_vendor_decide(std::size_t idx);
  void send_callbacks(std::size_t idx, bool until_acknowledged = false);
  // Delivered, lost, duplicated or late; `until_acknowledged`: never lost.
  void schedule_delivery(const Delivery& d, bool until_acknowledged = false);
  // A decided charge may be reversed later (Profile::p_reversal).
  void maybe_reverse(std::size_t idx);
  void on_vendor_reverse(std::size_t idx);
  bool has_refunds(const Charge& c);
  std::optional<Charge> ledger_truth(const std::string& key) const;
  // Refunds: what the engine's call_vendor does for a refund row, then the vendor's side.
  void on_vendor_receive_refund(std::size_t i);
  void commit_refund(const providers::RefundRequest& req, std::optional<std::size_t> answer_to);
  VendorResult answer_for(const VendorRefund& r) const;
  const VendorRefund* refund_truth(const std::string& key) const;

  // ---- the checker (checker.cpp): the invariants, after every transaction and once the run
  // has settled

  static bool is_state_event(const std::string& type);

  // Invariants checked after every committed transaction.
  void check_transaction(const Snapshot& before, const std::string& what, bool operator_resolution);

  // Invariant 1: the vendor only ever hears of a key a committed row holds, with the row's
  // parameters, and with the attempt already counted. (No transaction is open between steps:
  // the connection sees exactly what is committed.)
  void check_committed_before_call(const Request& r);
  // The not-found rule (core/decide.h), from what a recorded answer did: a not_found acted on
  // (UNKNOWN -> PROCESSING to resubmit, or FAILED_FINAL) only for a query of an UNKNOWN
  // payment, under a finite not_found_final_after, once that has passed since the last submit
  // ended.
  void check_not_found_rule(const Request& r, const Payment& was, const Payment& now);
  // A final answer contradicting a terminal payment changes nothing and is held in a case:
  // late_contradiction (or the case already open).
  void check_late_contradiction(const std::string& what, const Payment& was, PaymentState answer, bool case_open_before);
  bool open_case_of(const std::string& row_id, std::string* reason = nullptr);
  // The refund invariants over the committed rows: Σ refunds within the payment, and no
  // DEFERRED refund of a terminal payment.
  void check_refunds(const Snapshot& s, const std::string& what);
  void final_checks();
  void final_refund_checks(const std::vector<FinalRow>& rows);
  Options opts_;
  Rng rng_;
  SeededRandom ids_;
  ManualClock clock_;
  Profile profile_;
  Result result_;
  std::string trace_;
  std::uint64_t fingerprint_ = 0xcbf29ce484222325ULL;
  std::map<std::string, Contract> contracts_;
  std::map<std::string, RiskCap> caps_;
  std::unique_ptr<Database> db_;
  UnixMillis start_time_ = 0;
  std::uint64_t incarnation_ = 0;
  std::vector<EngineRt> engines_;
  std::priority_queue<Event, std::vector<Event>, std::greater<>> queue_;
  std::uint64_t seq_ = 0;
  bool settling_ = false;
  std::vector<IntakeOp> intakes_;
  std::set<std::size_t> intake_outstanding_;
  std::vector<Request> requests_;
  std::vector<Charge> ledger_;
  std::map<std::string, std::size_t> live_;
  std::set<std::string> committing_;
  std::vector<Delivery> deliveries_;
  std::set<std::string> acked_events_;
  std::set<std::string> retried_;  // payments the operator already sent back to the engine
  std::vector<RefundOp> refund_ops_;
  std::set<std::size_t> refund_outstanding_;  // refund intakes not answered yet
  std::vector<VendorRefund> vendor_refunds_;
  std::map<std::string, std::size_t> refund_keys_;  // the vendor's refunds by key
  std::vector<RefundCall> refund_calls_;
  // payment.corrected events an operator's resolution wrote, by payment: the only ones the
  // history may hold.
  std::map<std::string, int> corrections_resolved_;
  std::map<std::string, std::string> payment_of_key_;  // client_key -> payment id, as sent
};

}  // namespace payorch::dst
