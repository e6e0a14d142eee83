#pragma once
// The admin API of docs/contract.md §6: reconciliation cases (list, show, resolve, settlement import) and
// any tenant's payment or refund. Admin bearer tokens only (admin.token, admin.operators[]); a
// write records the token's operator, and a Payorch-Operator header naming anyone else is
// refused (403 operator-mismatch). Routing and JSON mapping only: the decisions
// are store::resolve_case / store::import_settlement and the state machine under them.
//
// Routes (everything else under these prefixes is 404):
//   GET  /v1/reconciliation?status=open|resolved&limit=&cursor=  → {"data":[case],"next_cursor"}
//   GET  /v1/reconciliation/{case_id}  → case view + "allowed_outcomes", "retry_refused"
//   POST /v1/reconciliation/{case_id}/resolve  (application/json) → {"case","payment"}
//   POST /v1/reconciliation/import?provider=NAME  (text/csv)     → import summary
//   GET  /v1/admin/payments/{payment_id}              → payment view + "tenant_id", "refunds"
//   GET  /v1/admin/payments?operation_id=X[&tenant_id=T] → {"payments":[payment view + "tenant_id"]}
//        every configured tenant's payment of that operation_id (or tenant T's only)
//   GET  /v1/admin/refunds/{refund_id}                → refund view + "tenant_id"
//   GET  /v1/admin/refunds/{operation_id}?tenant_id=T → the same, by the tenant's operation_id
//   GET  /v1/admin/timeline?id=pay_…|re_…  | ?operation_id=X[&tenant_id=T] | ?client_key=ck_…
//        → {"matches":[{"kind","tenant_id","payment","refund","timeline","cases"}]}: the rows
//        named and their history, transitions with fence and cause (http/admin_timeline.h)
#include <boost/json/object.hpp>
#include <boost/url/params_view.hpp>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/config.h"
#include "core/clock.h"
#include "core/decide.h"
#include "core/payment.h"
#include "http/auth.h"
#include "http/server.h"
#include "store/read_pool.h"
#include "store/cases.h"
#include "store/store.h"

namespace payorch::http {

// The reconciliation case view of docs/contract.md §4.
boost::json::object case_view(const store::ReconciliationCase& c);
// The payment view of docs/contract.md §4 plus "tenant_id": the admin sees every tenant's payments.
boost::json::object admin_payment_view(const Payment& p);
// The refund view of docs/refunds.md plus "tenant_id"; `row` is a refund row.
boost::json::object admin_refund_view(const Payment& row);


class AdminApi final : public Handler {
public:
  // `rng` is used on the writer thread only. All references must outlive the AdminApi.
  AdminApi(const config::Config& config, store::Store& store,
           const Clock& clock, Random& rng);

  // True for the paths this API answers (the tenant API hands them over).
  static bool owns(std::string_view path);

  // Called with the id of every payment a committed resolution or import wrote (state, next
  // action or case), on the writer thread before the answer: publish it (ChangeNotifier) and
  // wake the engine for a `retry`. Only posts work elsewhere. Set before serving.
  using ChangeHook = std::function<void(const std::string& payment_id)>;
  void set_on_change(ChangeHook hook) { on_change_ = std::move(hook); }

  // Reads answer at once; resolve and import answer from the writer thread after their commit.
  void handle(Request&& req, Responder done) override;
  // 401 unless the header carries an admin or operator token: checked before anything about the
  // path is revealed, and before the body is read.
  std::optional<Response> screen(const Request& header) override;

private:
  Response list_cases(const Request& req, boost::urls::params_view query) const;
  Response show_case(const Request& req, const std::string& case_id) const;
  // The tenants a query by operation_id covers: `tenant_id`'s alone, else every configured one.
  std::vector<std::string> tenants_asked(const std::optional<std::string>& tenant_id) const;
  // Why an operator's `retry` would be refused now for case `c` about `row` (nullopt: it would
  // be taken): the rule resolve applies, for the case view's allowed_outcomes.
  std::optional<std::string> retry_refusal_now(const store::ReconciliationCase& c,
                                               const std::optional<Payment>& row) const;
  Response show_payment(const Request& req, const std::string& payment_id) const;
  Response find_payments(const Request& req, boost::urls::params_view query) const;
  Response show_refund(const Request& req, const std::string& refund_id,
                       boost::urls::params_view query) const;
  Response timeline(const Request& req, boost::urls::params_view query) const;
  // `by`: the operator whose token the request carries (Authenticator::admin_operator).
  void resolve(const Request& req, const std::string& case_id, const std::string& by,
               Responder done);
  void import(const Request& req, boost::urls::params_view query, const std::string& by,
              Responder done);

  const config::Config& config_;
  store::Store& store_;
  const Clock& clock_;
  Random& rng_;
  Authenticator auth_;
  std::map<std::string, Contract, std::less<>> contracts_;  // by provider name
  ChangeHook on_change_;
};

}  // namespace payorch::http
