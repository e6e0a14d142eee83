/* payorch's protocol (docs/contract.md §3, §5, §6, §8) as a Promela model, explored exhaustively by spin.
 * docs/model.md has the table step -> code, the bounds, the state counts and a worked trail.
 *
 * One payment (amount AMOUNT) with up to two refunds; two workers; one vendor; the vendor's
 * callbacks; an operator; a clock. Each atomic block is one database transaction (or one vendor
 * action) of the real code; between two of them any other process may run, the clock may move
 * (a worker "pauses past its lease"), and a worker may crash and restart.
 *
 * Broken variants (each must give a counterexample; tests/model/check runs them):
 *   BROKEN_NO_FENCE            the recording CAS ignores the fence          -> stale write lands
 *   BROKEN_NEW_KEY             a resubmit gets a fresh client_key           -> second charge
 *   BROKEN_NO_RETENTION_GUARD  resubmits ignore key retention              -> second charge
 *   BROKEN_TERMINAL_OVERWRITE  a late final answer overwrites a terminal    -> terminal changed
 *   BROKEN_NOT_FOUND_FINAL     "not found" trusted at once, as final        -> FAILED_FINAL, vendor paid
 *   BROKEN_NO_CONFIRMED_CLOSE  give-up concludes FAILED_FINAL without close -> FAILED_FINAL, vendor paid
 *   BROKEN_REFUNDS_NOT_SUMMED  money rule checks only the new refund       -> sum of refunds > amount
 *   BROKEN_REFUND_EARLY        a DEFERRED refund is sent                   -> refund before SUCCEEDED
 *   BROKEN_NO_DEDUP            the callback inbox is not consulted         -> a redelivery has an effect
 *   BROKEN_RESEND_INTERRUPTED  an interrupted submit is sent again, fresh  -> second charge (receipt-only vendor)
 *   BROKEN_CLAIM_IGNORES_LEASE a claim ignores a live lease                -> payment taken from a live lease holder
 *   BROKEN_NO_GIVE_UP          the retry budget never runs out             -> liveness: never terminal nor a case
 */
#include "params.pml"

/* ===== the payments row (schema/, store/payments.cpp) ===== */
bool created;                 /* the intake transaction committed (client_key, params, digest) */
byte st = PROCESSING;         /* payments.state */
byte nxt = A_SUBMIT;          /* payments.next_action */
/* payments.fence, as what it decides: whether the fence a worker holds is still the row's.
 * A claim (fence + 1) makes the claimant's current and every other one stale; a write without
 * a lease (callback, operator: fence + 1) makes every held fence stale. */
bool fence_ok[2];
byte owner;                   /* payments.lease_owner: 0 none, 1 or 2 a worker */
byte lease_exp = NO_T;        /* payments.lease_expires_at */
byte attempts;                /* payments.attempt_count */
byte budget_base;             /* payments.budget_attempts_base */
byte budget_start = NO_T;     /* payments.budget_started_at */
byte first_submit = NO_T;     /* payments.first_submit_at */
byte last_end = NO_T;         /* payments.last_submit_ended_at */
bool submit_open;             /* last_submit_started_at > last_submit_ended_at */
bool has_ref;                 /* payments.vendor_reference is set */
bool closed;                  /* payments.vendor_closed_at is set */
bool stop_req;                /* payments.stop_requested_at is set */
bool case_open;               /* an open reconciliation case for the payment */
byte case_reason;

/* ===== refunds (store/refunds.cpp rows, docs/refunds.md) ===== */
byte rf_st[2];                /* RF_* */
byte rf_amt[2];

/* ===== the vendor ===== */
byte v_order = V_NONE;        /* the order under the payment's client_key */
byte v_seen = NO_T;           /* when the vendor first saw the key (its retention runs from here) */
byte orders;                  /* orders the vendor created for this payment (property: <= 1) */
byte v_refunded;              /* refunded at the vendor */
/* one request slot per worker: what is on the wire, when it was sent, by when it commits */
byte w_req[2];
bool w_newkey[2];             /* BROKEN_NEW_KEY: the request carries a fresh key */
byte w_sent[2] = NO_T;
byte w_deadline[2] = NO_T;
byte w_ans[2];
byte w_lease[2] = NO_T;       /* the lease each worker holds in memory (engine.cpp keep_sendable) */
/* the vendor's callback for the order's final status */
byte cb_status;               /* 0 none, O_SUCCEEDED or O_DECLINED */
byte cb_deliveries;
bool inbox;                   /* callback_inbox has its event id */

/* ===== the clock ===== */
byte now;

/* ===== ghosts for the properties ===== */
bool ff_by_operator;          /* the current FAILED_FINAL is a human's judgement */
bool ever_succeeded;          /* the payment was SUCCEEDED at some point */
byte cb_effects;              /* effects of the vendor's one callback event */
byte crashes;
/* Liveness only: after `calm` (from the clock's first tick past MAXT on) workers are timely:
 * no time passes between a worker's claim and its call, nor between its call's answer (or
 * timeout) and the record. Before it, and in every safety run, pauses are unbounded. */
bool calm;
bool busy[2];
byte resolutions;

#define older(t, w)  ((t) != NO_T && now - (t) >= (w))
/* core/decide.cpp resubmit_outlives_key: a resubmit started now could still be on the wire or
 * leased (now + request_timeout + lease) past 0.9 x key_retention after the first submit. The
 * one home of the rule: plan(), decide() and the operator's retry all ask it. */
#ifdef BROKEN_NO_RETENTION_GUARD
#define outlives_key false
#else
#define outlives_key (first_submit != NO_T && (now + TIMEOUT + LEASE - first_submit) * 10 > KEY_RETENTION * 9)
#endif
/* core/decide.cpp budget_spent: max_attempts, or give_up_after since the budget started */
#ifdef BROKEN_NO_GIVE_UP
#define budget_spent false
#else
#define budget_spent (attempts - budget_base >= MAX_ATTEMPTS || \
                      (budget_start != NO_T && older(budget_start, GIVE_UP_AFTER)) || \
                      (budget_start == NO_T && older(first_submit, GIVE_UP_AFTER)))
#endif
#define lease_free   (owner == 0 || now >= lease_exp)

/* A change of the payment's state. store/transitions.cpp apply_transition, with the DEFERRED
 * refunds moved in the same transaction (store/refund_flow.h release_deferred_flow,
 * core/refund_state.cpp deferred_refund_step) and payment_corrected cases (not modelled: the
 * refund keeps its state). `by_op`: an operator's resolution (store/resolution_flow.h). */
inline set_state(to, by_op) {
  /* Property: a terminal state changes only by a resolution (docs/contract.md §3, invariant 4). */
  assert(!terminal(st) || st == to || by_op);
  st = to;
  if
  :: to == FAILED_FINAL -> ff_by_operator = by_op
  :: else -> ff_by_operator = false
  fi;
  if
  :: to == SUCCEEDED ->
     ever_succeeded = true;
     if :: rf_st[0] == RF_DEFERRED -> rf_st[0] = RF_PROCESSING :: else fi;
     if :: rf_st[1] == RF_DEFERRED -> rf_st[1] = RF_PROCESSING :: else fi
  :: to == FAILED_FINAL ->
     if :: rf_st[0] == RF_DEFERRED -> rf_st[0] = RF_FAILED :: else fi;
     if :: rf_st[1] == RF_DEFERRED -> rf_st[1] = RF_FAILED :: else fi
  :: else
  fi
}

/* core/state_machine.cpp escalate (give_up): state unchanged, next_action none, a case. */
inline give_up(reason) {
  nxt = A_NONE;
  if :: !case_open -> case_open = true; case_reason = reason :: else fi
}

/* store/leases.cpp release_lease, or a transition's release_lease: owner and expiry cleared */
inline release_lease() { owner = 0; lease_exp = NO_T }

inline fences_stale() { fence_ok[0] = false; fence_ok[1] = false }

inline sat_dec(t) { if :: t != NO_T && t > 0 -> t-- :: else fi }

#include "vendor.pml"
#include "worker.pml"
#include "actors.pml"
