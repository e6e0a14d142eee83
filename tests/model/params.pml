/* payorch protocol model: constants, the contract under check, and the bounds.
 * The model (tests/model/payorch.pml) and its table step -> code are described in docs/model.md.
 *
 * One contract per verifier run, chosen with -DCONTRACT_<NAME> (tests/model/check runs each):
 *   CONTRACT_LOOKUP  recovery lookup, not_found_final_after finite (resubmits by the same key)
 *   CONTRACT_REPLAY  recovery replay (Stripe, Adyen, PayPal, Square)
 *   CONTRACT_NONE    receipt-only: an UNKNOWN goes straight to a case
 *   CONTRACT_CLOSE   lookup, not_found_final_after never, confirmed_close (wechatpay, alipay)
 * (config/contract.h contract_of, core/decide.h struct Contract)
 */

/* --- payment states (core/state_machine.h PaymentState) --- */
#define PROCESSING   0
#define UNKNOWN      1
#define SUCCEEDED    2
#define FAILED_FINAL 3
#define terminal(s)  ((s) >= SUCCEEDED)

/* --- next_action (core/state_machine.h NextAction) --- */
#define A_SUBMIT 0
#define A_QUERY  1
#define A_NONE   2

/* --- calls (core/decide.h CallKind); 0 on the wire = no request --- */
#define C_SUBMIT 1
#define C_QUERY  2
#define C_CLOSE  3

/* --- vendor outcomes as the worker sees them (core/decide.h VendorOutcome); 0 = no answer yet --- */
#define O_SUCCEEDED 1
#define O_DECLINED  2
#define O_PENDING   3
#define O_NOT_FOUND 4
#define O_AMBIGUOUS 5   /* timeout, lost answer, 5xx */

/* --- the vendor's order for the payment's client_key --- */
#define V_NONE     0
#define V_PENDING  1
#define V_PAID     2
#define V_DECLINED 3
#define V_CLOSED   4

/* --- case reasons (core/state_machine.h CaseReason), only those the model can open --- */
#define R_NONE        0
#define R_BUDGET      1   /* retry_budget_exhausted */
#define R_UNRECOVER   2   /* unrecoverable_contract */
#define R_RETENTION   3   /* key_retention_expiring */
#define R_LATE        4   /* late_contradiction */
#define system_case(r) ((r) == R_BUDGET || (r) == R_UNRECOVER || (r) == R_RETENTION)

/* --- refund states (core/refund_state.h RefundState); RF_NONE = not accepted --- */
#define RF_NONE       0
#define RF_DEFERRED   1
#define RF_PROCESSING 2
#define RF_SUCCEEDED  3
#define RF_FAILED     4

/* --- the contract --- */
#define REC_LOOKUP 0
#define REC_REPLAY 1
#define REC_NONE   2
#if defined(CONTRACT_REPLAY)
#define RECOVERY REC_REPLAY
#define NFFA_FINITE 0
#define CONFIRMED_CLOSE 0
#elif defined(CONTRACT_NONE)
#define RECOVERY REC_NONE
#define NFFA_FINITE 0
#define CONFIRMED_CLOSE 0
#elif defined(CONTRACT_CLOSE)
#define RECOVERY REC_LOOKUP
#define NFFA_FINITE 0
#define CONFIRMED_CLOSE 1
#else /* CONTRACT_LOOKUP, the default */
#define RECOVERY REC_LOOKUP
#define NFFA_FINITE 1
#define CONFIRMED_CLOSE 0
#endif

/* --- bounds: one tick of the model clock is one unit of time --- */
#define TIMEOUT      1   /* timeouts.request: a call's answer or its timeout within this */
#define LAG          1   /* the vendor may commit a request up to this long after the caller's timeout */
#define LEASE        2   /* engine.lease (> TIMEOUT: config's startup check) */
 /* engine.cpp keep_sendable sends a call only if now + request_timeout <= lease_expires_at:
  * no room is left to record an answer that comes at the timeout, so a lease can lapse between
  * that answer and its record. Safety runs model exactly that (margin 0); the liveness runs
  * assume timely workers, whose record fits in the lease (margin 1). See docs/model.md. */
#ifdef LIVENESS
#define SEND_MARGIN  1
#else
#define SEND_MARGIN  0
#endif
#define NFFA         2   /* contract.not_found_final_after (>= LAG), when finite */
#define RETENTION    4   /* contract.key_retention: the vendor forgets the key this long after it first saw it */
/* contract.key_retention as payorch reads it (resubmit_outlives_key). A receipt-only vendor
 * promises nothing for the key (its vendor in the model never honours it), so nothing ties the
 * configured value to the vendor: it is taken longer than any window the model compares
 * (now + TIMEOUT + LEASE - first_submit <= MAXT + 3 < 0.9 x 8), and the guard never stops a
 * resubmit there. */
#if RECOVERY == REC_NONE
#define KEY_RETENTION 8
#else
#define KEY_RETENTION RETENTION
#endif
#ifndef GIVE_UP_AFTER
#define GIVE_UP_AFTER 2  /* retry.give_up_after */
#endif
#ifndef MAX_ATTEMPTS
#define MAX_ATTEMPTS 3   /* retry.max_attempts */
#endif
#ifndef CLOSE_NOT_BEFORE
#define CLOSE_NOT_BEFORE 1 /* contract.close_not_before (under CONFIRMED_CLOSE) */
#endif
#define MAXT         4   /* the clock counts 0..MAXT, then shifts every timestamp back (see clock) */
#define NO_T         255 /* "not set" for a timestamp */
#define AMOUNT       2   /* the payment's amount_minor */
#ifndef MAX_CRASHES
#define MAX_CRASHES  1   /* worker crashes in one run (each restarts at its loop's top) */
#endif
#ifndef MAX_RESOLUTIONS
#define MAX_RESOLUTIONS 1 /* operator resolutions in one run */
#endif
#ifndef MAX_DELIVERIES
#define MAX_DELIVERIES 2 /* deliveries of one vendor callback (duplicates) */
#endif
