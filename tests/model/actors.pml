/* Intake, callbacks, the operator, refunds, the clock, and the properties. */

/* ---- intake (store/intake.cpp record_intake): the row with its client_key, params, digest
 *      and payment.created in one transaction, before any vendor call ---- */
inline intake() {
  created = true
}

/* ---- vendor callbacks (store/callbacks.cpp record_callback, store/callback_flow.h
 *      decide_callback, apply_final_callback): each delivery is one transaction. A callback
 *      may come at any time (late), any number of times up to MAX_DELIVERIES (duplicated), in
 *      any order with the workers' answers and queries (reordered), or never. ---- */
/* Property: one vendor event has at most one effect (a state change or a case), however often
 * it is delivered (invariant 7). */
inline callback_effect() {
  cb_effects++;
  assert(cb_effects <= 1)
}

active proctype callbacks() {
  byte cs;
end:
  do
  :: atomic {
       cb_status != 0 && cb_deliveries < MAX_DELIVERIES ->
       cb_deliveries++;
       if
#ifndef BROKEN_NO_DEDUP
       :: inbox -> skip   /* the inbox row's primary key: a redelivery is a duplicate (invariant 7) */
#endif
       :: else ->
          inbox = true;
          cs = (cb_status == O_SUCCEEDED -> SUCCEEDED : FAILED_FINAL);
          if
          :: terminal(st) && st == cs -> skip   /* confirmed */
          :: terminal(st) && st != cs ->
#ifdef BROKEN_TERMINAL_OVERWRITE
             set_state(cs, false)
#else
             /* late_contradiction: the state stands (invariant 4) */
             if :: !case_open -> case_open = true; case_reason = R_LATE; callback_effect() :: else fi
#endif
          :: !terminal(st) ->
             /* apply_unleased: CAS on the state; releases the lease, fence + 1, so a worker
              * whose call is in flight finds itself stale */
             set_state(cs, false); nxt = A_NONE; release_lease(); fences_stale(); callback_effect();
             if :: case_open && system_case(case_reason) -> case_open = false; case_reason = R_NONE
                :: else fi
          fi;
          cs = 0
       fi
     }
  od
}

/* ---- the operator (store/resolution_flow.h resolve_case_on): resolves an open case as
 *      succeeded, failed_final or retry; one transaction ---- */
active proctype operator() {
end:
  do
  :: atomic {
       case_open && resolutions < MAX_RESOLUTIONS ->
       resolutions++;
       if
       :: true ->   /* succeeded */
          if
          :: st != SUCCEEDED -> set_state(SUCCEEDED, true); nxt = A_NONE; release_lease(); fences_stale()
          :: else
          fi
       :: true ->   /* failed_final */
          if
          :: CONFIRMED_CLOSE && first_submit != NO_T && !terminal(st) ->
             /* stop_at_vendor: request_stop, resume(state, true); the lease stays, fenced out */
             stop_req = true; nxt = A_QUERY; fences_stale()
          :: else ->
             if
             :: st != FAILED_FINAL -> set_state(FAILED_FINAL, true); nxt = A_NONE; release_lease(); fences_stale()
             :: else
             fi
          fi
       :: /* retry: only while the key is retained (resolution.cpp retry_refusal) */
          !terminal(st) && !outlives_key ->
          nxt = (st == UNKNOWN || has_ref -> A_QUERY : A_SUBMIT);
          budget_base = attempts; budget_start = now; stop_req = false; fences_stale()
       fi;
       case_open = false; case_reason = R_NONE
     }
  od
}

#ifndef NO_REFUNDS
/* ---- refund intake (store/refund_flow.h refund_intake_flow, core/refund.cpp admit_refund):
 *      two refunds of 1 or 2, each admitted in one transaction that reads the others ---- */
active proctype refund_client() {
  byte i, a, sum;
end:
  do
  :: i < 2 ->
     atomic {
       if :: a = 1 :: a = 2 fi;
       sum = (rf_st[0] != RF_NONE && rf_st[0] != RF_FAILED -> rf_amt[0] : 0) +
             (rf_st[1] != RF_NONE && rf_st[1] != RF_FAILED -> rf_amt[1] : 0);
       if
       :: st == FAILED_FINAL -> skip                  /* 409 payment-not-refundable */
#ifdef BROKEN_REFUNDS_NOT_SUMMED
       :: st != FAILED_FINAL && a > AMOUNT -> skip
       :: st != FAILED_FINAL && a <= AMOUNT ->
#else
       :: st != FAILED_FINAL && sum + a > AMOUNT -> skip   /* 422 refund-exceeds-payment */
       :: st != FAILED_FINAL && sum + a <= AMOUNT ->
#endif
          rf_amt[i] = a;
          rf_st[i] = (st == SUCCEEDED -> RF_PROCESSING : RF_DEFERRED)
       fi;
       /* Property: the refunds that are not FAILED_FINAL sum to at most the amount. */
       assert((rf_st[0] != RF_NONE && rf_st[0] != RF_FAILED -> rf_amt[0] : 0) +
              (rf_st[1] != RF_NONE && rf_st[1] != RF_FAILED -> rf_amt[1] : 0) <= AMOUNT);
       i++; a = 0; sum = 0
     }
  :: else -> break
  od
}

/* ---- the refund calls (engine.cpp call_vendor with steps.cpp refund_request_of; the vendor's
 *      POST /v1/refunds refuses more than the charge). A refund row's own recovery is the
 *      payment protocol above and is not repeated here. ---- */
inline send_refund(k) {
  /* Property: no refund is sent before its payment was SUCCEEDED (docs/contract.md §8). */
  assert(ever_succeeded);
  if
  :: v_order == V_PAID && v_refunded + rf_amt[k] <= AMOUNT ->
     v_refunded = v_refunded + rf_amt[k]; rf_st[k] = RF_SUCCEEDED
  :: else -> rf_st[k] = RF_FAILED   /* declined (exceeds_charge, no charge) */
  fi
}

active proctype refunder() {
end:
  do
#ifdef BROKEN_REFUND_EARLY
  :: atomic { (rf_st[0] == RF_PROCESSING || rf_st[0] == RF_DEFERRED) -> send_refund(0) }
  :: atomic { (rf_st[1] == RF_PROCESSING || rf_st[1] == RF_DEFERRED) -> send_refund(1) }
#else
  :: atomic { rf_st[0] == RF_PROCESSING -> send_refund(0) }
  :: atomic { rf_st[1] == RF_PROCESSING -> send_refund(1) }
#endif
  od
}

#endif

/* ---- the clock (core/clock.h Clock; util/system_clock.h). It never passes the moment by which
 *      a request on the wire must have committed or been lost. After MAXT it stays at MAXT and
 *      every timestamp moves one back instead (0 = "at least MAXT ago", older than every
 *      window the model compares with), so time runs forever over finitely many states. ---- */
/* a worker's call is answered or timed out and the worker has not looked yet */
#define answer_due(k) (w_sent[k] != NO_T && (w_ans[k] != 0 || now >= w_sent[k] + TIMEOUT))

active proctype clock() {
end:
  do
  :: atomic {
       (w_req[0] == 0 || now < w_deadline[0]) && (w_req[1] == 0 || now < w_deadline[1]) &&
       (!calm || (!busy[0] && !busy[1] && !answer_due(0) && !answer_due(1))) ->
       if
       :: now < MAXT -> now++
       :: else ->
#ifdef LIVENESS
          calm = true;
#endif
          sat_dec(lease_exp); sat_dec(budget_start); sat_dec(first_submit); sat_dec(last_end);
          sat_dec(v_seen); sat_dec(w_sent[0]); sat_dec(w_sent[1]); sat_dec(w_deadline[0]);
          sat_dec(w_deadline[1]); sat_dec(w_lease[0]); sat_dec(w_lease[1])
       fi
     }
  od
}

/* ---- Property: no FAILED_FINAL reached by automatic work (a callback, an answer, a confirmed
 *      close) while the vendor holds a paid charge for the key. An operator's failed_final is
 *      a human's judgement and not checked. ---- */
#define ff_while_paid (st == FAILED_FINAL && !ff_by_operator && v_order == V_PAID)
#ifndef LIVENESS
active proctype monitor() {
  atomic { ff_while_paid -> assert(!ff_while_paid) }
}
#endif

init {
  atomic { intake(); run worker(1); run worker(2) }
}

#ifdef LIVENESS
/* Liveness under weak fairness: every payment ends terminal or in a case, and no refund stays
 * accepted but unsent. */
#define settled ((terminal(st) || case_open) && rf_st[0] != RF_PROCESSING && rf_st[1] != RF_PROCESSING)
ltl live { <>[] settled }
#endif
