/* A worker of the engine (src/engine/engine.cpp Engine::poll -> call_vendor -> record). Its three
 * steps are three transactions or actions: claim_round (one write transaction), the vendor call,
 * record_outcome (one write transaction). Between them it may pause for any time (the clock
 * moves), and at each point it may crash and restart at its loop's top, forgetting everything
 * it held in memory (its lease, its call). */

#define P_NOTHING 0
#define P_CALL    1
#define P_GIVE_UP 2
#define P_WAIT    3
#define P_FAIL    4   /* BROKEN_NO_CONFIRMED_CLOSE only */

/* core/decide.cpp plan(), for a row in state `pst` with next_action `pnxt` whose last submit
 * ended at `plast`: sets pk (P_*), kind (the call), stopping, reason. */
inline plan(pst, pnxt, plast) {
  pk = P_CALL; kind = 0; stopping = false; reason = R_NONE; resub = false;
  if
  :: budget_spent || stop_req -> reason = R_BUDGET
  :: else ->
     if
     :: pst == UNKNOWN && RECOVERY == REC_NONE -> reason = R_UNRECOVER
     :: else ->
        if
        :: pnxt == A_SUBMIT -> kind = C_SUBMIT; resub = (first_submit != NO_T)
        :: pnxt == A_QUERY && RECOVERY == REC_LOOKUP -> kind = C_QUERY
        :: pnxt == A_QUERY && RECOVERY == REC_REPLAY -> kind = C_SUBMIT; resub = true
        :: pnxt == A_QUERY && RECOVERY == REC_NONE -> pk = P_WAIT  /* only a callback can tell */
        fi;
        if :: resub && outlives_key -> reason = R_RETENTION :: else fi
     fi
  fi;
  if
  :: reason != R_NONE ->
     /* plan()'s give_up lambda: under a confirmed close the order is closed and looked at first */
     if
     :: CONFIRMED_CLOSE && first_submit != NO_T && (reason == R_BUDGET || reason == R_RETENTION) ->
#ifdef BROKEN_NO_CONFIRMED_CLOSE
        pk = P_FAIL
#else
        stopping = true;
        if
        :: closed -> kind = C_QUERY
        :: !closed && ((plast != NO_T && older(plast, CLOSE_NOT_BEFORE)) ||
                       (plast == NO_T && older(first_submit, CLOSE_NOT_BEFORE))) -> kind = C_CLOSE
        :: else -> pk = P_WAIT   /* the vendor refuses an earlier close: scheduled */
        fi
#endif
     :: else -> pk = P_GIVE_UP
     fi
  :: else
  fi
}

/* core/decide.cpp decide() and decide_stopping(): the answer `ans` to `kind`, made from the
 * claimed state cst/cnxt, as the target state tst, next action tnxt, give-up reason gu. */
inline decide() {
  tst = cst; tnxt = A_QUERY; gu = R_NONE; by_op = false; to_closed = false;
  if
  :: stopping ->
     if
     :: kind == C_CLOSE && ans == O_SUCCEEDED -> to_closed = true          /* vendor_closed */
     :: (kind == C_QUERY && ans == O_DECLINED) -> tst = FAILED_FINAL; tnxt = A_NONE
     :: ans == O_NOT_FOUND && cstop -> tst = FAILED_FINAL; tnxt = A_NONE; by_op = true
     :: else -> gu = reason
     fi
  :: !stopping && kind == C_SUBMIT && cst == PROCESSING && cnxt == A_SUBMIT ->
     /* a fresh submit from PROCESSING */
     if
     :: ans == O_SUCCEEDED -> tst = SUCCEEDED; tnxt = A_NONE
     :: ans == O_DECLINED -> tst = FAILED_FINAL; tnxt = A_NONE
     :: ans == O_PENDING -> tst = PROCESSING
     :: else -> tst = UNKNOWN;                                          /* submit_ambiguous */
        if :: RECOVERY == REC_NONE -> gu = R_UNRECOVER :: else fi
     fi
  :: else ->
     /* recovering: a query, or a replay from UNKNOWN */
     if
     :: ans == O_SUCCEEDED -> tst = SUCCEEDED; tnxt = A_NONE
     :: ans == O_DECLINED -> tst = FAILED_FINAL; tnxt = A_NONE
     :: ans == O_PENDING -> tst = PROCESSING
     :: ans == O_NOT_FOUND ->
#ifdef BROKEN_NOT_FOUND_FINAL
        tst = FAILED_FINAL; tnxt = A_NONE
#else
        if
        :: kind == C_QUERY && cst == UNKNOWN && NFFA_FINITE && older(last_end, NFFA) ->
           if
           :: outlives_key -> gu = R_RETENTION                         /* stays UNKNOWN */
           :: else -> tst = PROCESSING; tnxt = A_SUBMIT                /* recovery_not_found */
           fi
        :: else                                                        /* inconclusive */
        fi
#endif
     :: else                                                           /* inconclusive */
     fi
  fi
}

/* A worker forgets what it held: after its record, a crash, or a claim with nothing to call. */
inline reset_worker() {
  att_before = 0; kind = 0; reason = 0; pk = 0; cst = 0; cnxt = 0; ans = 0; tst = 0; tnxt = 0; gu = 0;
  stopping = false; resub = false; interrupted = false; was_first = false; was_open = false;
  cstop = false; by_op = false; to_closed = false; w_lease[i] = NO_T; fence_ok[i] = false; busy[i] = false
}

proctype worker(byte me) {
  byte i = me - 1;
  byte att_before, kind, reason, pk, cst, cnxt, ans, tst, tnxt, gu;
  bool stopping, resub, interrupted, was_first, was_open, cstop, by_op, to_closed;

end_top:
  /* ---- claim_round (src/engine/steps.cpp claim_round; store/leases.cpp claim_due,
   *      claim_lease, record_call_started): one write transaction ---- */
  atomic {
#ifdef BROKEN_CLAIM_IGNORES_LEASE
    created && !terminal(st) && nxt != A_NONE && w_req[i] == 0 ->
#else
    created && !terminal(st) && nxt != A_NONE && lease_free && w_req[i] == 0 ->
#endif
    /* steps.cpp submit_in_flight: a submit started and never reported back */
#ifdef BROKEN_RESEND_INTERRUPTED
    interrupted = false;   /* ... is sent again, as a fresh submit */
#else
    interrupted = (st == PROCESSING && submit_open);
#endif
    if
    :: interrupted -> plan(UNKNOWN, A_QUERY, now)
    :: else -> plan(st, nxt, last_end)
    fi;
    if
    :: pk == P_WAIT && !interrupted -> pk = P_NOTHING   /* next_attempt_at in the future: not due */
       /* (nothing written: the same state, as if not looked at) */
    :: else ->
       /* Property: no claim takes the payment from a worker whose lease still holds (what the
        * lease itself guarantees; fence_ok of the other worker: it is between its claim and
        * its record). */
       assert(!fence_ok[1 - i] || now >= lease_exp);
       /* leases.cpp claim_lease: owner, lease_expires_at, fence + 1 */
       owner = me; lease_exp = now + LEASE; fence_ok[i] = true; fence_ok[1 - i] = false;
       w_lease[i] = lease_exp;
       if
       :: interrupted ->   /* steps.cpp claim_round: submit_ambiguous, last_submit_ended_at = now */
          set_state(UNKNOWN, false); nxt = A_QUERY; last_end = now; submit_open = false
       :: else
       fi;
       cst = st; cnxt = nxt; cstop = stop_req;
       if
       :: pk == P_WAIT -> release_lease(); pk = P_NOTHING            /* release_lease, due later */
       :: pk == P_GIVE_UP -> give_up(reason); release_lease(); pk = P_NOTHING
       :: pk == P_FAIL -> set_state(FAILED_FINAL, false); nxt = A_NONE; release_lease(); pk = P_NOTHING
       :: pk == P_CALL ->
          /* leases.cpp record_call_started: committed before anything is sent (invariant 1) */
          /* attempt_count + 1 (the model stops counting once the budget is spent: only
           * "spent or not" is ever read) */
          busy[i] = true;
          att_before = attempts;
          if :: attempts - budget_base < MAX_ATTEMPTS -> attempts++ :: else fi;
          if
          :: kind == C_SUBMIT ->
             was_first = (first_submit == NO_T);
             if :: was_first -> first_submit = now :: else fi;
             was_open = submit_open; submit_open = true
          :: else
          fi
       fi
    fi;
    interrupted = false; resub = false;
    if
    :: pk != P_CALL -> reset_worker()
    :: else
    fi
  }
  if
  :: kind == 0 -> goto end_top
  :: else
  fi;

  /* a crash between the claim's commit and the call (engine.cpp poll, "Crash point") */
  if
  :: atomic { crashes < MAX_CRASHES -> crashes++; reset_worker() }; goto end_top
  :: true
  fi;

  /* ---- the call (engine.cpp keep_sendable, call_vendor) ---- */
  atomic {
    if
    :: now + TIMEOUT + SEND_MARGIN <= w_lease[i] ->
       assert(created);   /* invariant 1: a committed row holds the key before any call */
       pk = 0; w_lease[i] = NO_T; busy[i] = false;
       w_req[i] = kind; w_sent[i] = now; w_deadline[i] = now + TIMEOUT + LAG; w_ans[i] = 0;
#ifdef BROKEN_NEW_KEY
       w_newkey[i] = (kind == C_SUBMIT && !was_first);
#endif
    :: else ->
       /* the lease no longer holds the whole request timeout: steps.cpp unclaim,
        * leases.cpp undo_call_started (fenced) */
       if
       :: fence_ok[i] ->
          attempts = att_before;
          if :: kind == C_SUBMIT -> submit_open = was_open; if :: was_first -> first_submit = NO_T :: else fi
             :: else fi;
          release_lease()
       :: else
       fi;
       reset_worker()
    fi
  }
  if
  :: kind == 0 -> goto end_top
  :: else
  fi;

  /* the answer within the request timeout, or the timeout (the request may still commit
   * later; an answer after the timeout is never read) */
  if
  :: atomic { w_ans[i] != 0 && now <= w_sent[i] + TIMEOUT -> ans = w_ans[i]; w_ans[i] = 0; w_sent[i] = NO_T; busy[i] = true }
  :: atomic { now >= w_sent[i] + TIMEOUT -> ans = O_AMBIGUOUS; w_sent[i] = NO_T; busy[i] = true }
  fi;

  /* a crash with the answer in hand (engine.cpp record, "Crash point") */
  if
  :: atomic { crashes < MAX_CRASHES -> crashes++; reset_worker() }; goto end_top
  :: true
  fi;

  /* ---- record_outcome (src/engine/steps.cpp record_outcome; store/transitions.cpp
   *      apply_transition: CAS on (id, state, fence)): one write transaction ---- */
  atomic {
    decide();
#ifdef BROKEN_NO_FENCE
    if
    :: st == cst ->
#else
    if
    :: st == cst && fence_ok[i] ->
#endif
       /* Property: a stale lease holder's write never lands (invariant 5). */
       assert(fence_ok[i]);
       if :: tst != st -> set_state(tst, by_op) :: else fi;
       nxt = tnxt; release_lease();
       if :: kind == C_SUBMIT -> last_end = now; submit_open = false :: else fi;
       if :: ans == O_SUCCEEDED || ans == O_DECLINED || ans == O_PENDING -> has_ref = true :: else fi;
       if :: to_closed -> closed = true :: else fi;
       if :: gu != R_NONE -> give_up(gu) :: else fi
    :: else ->
       /* steps.cpp reconcile_with_current: a final answer judged against the state now */
       if
       :: (ans == O_SUCCEEDED || ans == O_DECLINED) && tst != cst && terminal(tst) && terminal(st) && st != tst ->
#ifdef BROKEN_TERMINAL_OVERWRITE
          set_state(tst, false)
#else
          if :: !case_open -> case_open = true; case_reason = R_LATE :: else fi  /* late_contradiction */
#endif
       :: else   /* agrees, or not final, or held in a case (evidence only) */
       fi
    fi;
    reset_worker()
  }
  goto end_top
}
