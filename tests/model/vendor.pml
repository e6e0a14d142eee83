/* The vendor (docs/contract.md §5, the "sim" protocol; the real one is src/vendor_sim/, the adapters providers/).
 * Idempotent by key within its retention, it may commit a request and lose the answer, commit
 * late (up to LAG after the caller's timeout; the clock waits for that), answer pending and
 * decide later, answer lookups by reference, and close an order (CONTRACT_CLOSE).
 * Under CONTRACT_NONE (receipt-only) nothing says the vendor honours the key: the model's
 * vendor never does, and every submit that reaches it is a new order. */

/* the vendor still honours the key (docs/contract.md §5, key_retention); a receipt-only vendor never */
#define key_retained (RECOVERY != REC_NONE && v_seen != NO_T && !older(v_seen, RETENTION))

/* What a lookup by reference finds (src/vendor_sim/charge.cpp, GET /v1/charges?reference=). */
inline order_answer(o) {
  if
  :: v_order == V_NONE -> o = O_NOT_FOUND
  :: v_order == V_PENDING -> o = O_PENDING
  :: v_order == V_PAID -> o = O_SUCCEEDED
  :: v_order == V_DECLINED || v_order == V_CLOSED -> o = O_DECLINED
  fi
}

/* The order reached a final status: its callback is queued (delivered by `callbacks`). The
 * vendor may also never send it. */
inline emit_callback(status) {
  if
  :: cb_status = status
  :: skip
  fi
}

/* One request slot processed: POST /v1/charges, GET /v1/charges?reference=, or the close. */
inline process(i) {
  if
  :: w_req[i] == C_SUBMIT ->
     if
     :: key_retained && !w_newkey[i] ->
        /* same key, within retention: the stored answer (Idempotent-Replayed) */
        order_answer(o)
     :: else ->
        /* a key the vendor has not seen (or forgot): a new order */
        orders++;
        /* Property: at most one charge per payment (docs/contract.md §3, invariant 2). */
        assert(orders <= 1);
        if :: RECOVERY != REC_NONE -> v_seen = now :: else fi;   /* retention runs from here */
        if
        :: v_order = V_PAID; emit_callback(O_SUCCEEDED)
        :: v_order = V_DECLINED; emit_callback(O_DECLINED)
        :: v_order = V_PENDING
        fi;
        order_answer(o)
     fi
  :: w_req[i] == C_QUERY -> order_answer(o)
  :: w_req[i] == C_CLOSE ->
     /* close by out_trade_no (providers/wechatpay, providers/alipay close) */
     if
     :: v_order == V_NONE -> o = O_NOT_FOUND
     :: v_order == V_PENDING || v_order == V_CLOSED || v_order == V_DECLINED ->
        v_order = V_CLOSED; o = O_SUCCEEDED   /* closed now, or already closed and unpaid */
     :: v_order == V_PAID -> o = O_DECLINED   /* ORDERPAID: refused */
     fi
  fi;
  /* commit, then answer (if the caller still waits) or lose the answer */
  if
  :: w_sent[i] != NO_T && now <= w_sent[i] + TIMEOUT -> w_ans[i] = o
  :: true
  fi;
  w_req[i] = 0; w_newkey[i] = false; w_deadline[i] = NO_T
}

active proctype vendor() {
  byte o;
  do
  :: atomic { w_req[0] != 0 -> process(0); o = 0 }
  :: atomic { w_req[1] != 0 -> process(1); o = 0 }
  /* a request lost on the way: nothing committed; its caller times out */
  :: atomic { w_req[0] != 0 -> w_req[0] = 0; w_newkey[0] = false; w_deadline[0] = NO_T }
  :: atomic { w_req[1] != 0 -> w_req[1] = 0; w_newkey[1] = false; w_deadline[1] = NO_T }
  /* a pending order is decided (tok_pending succeeds later) */
  :: atomic { v_order == V_PENDING ->
       if
       :: v_order = V_PAID; emit_callback(O_SUCCEEDED)
       :: v_order = V_DECLINED; emit_callback(O_DECLINED)
       fi }
  /* a refund request (POST /v1/refunds); the vendor itself refuses more than the charge */
  od
}
