// `Prefer: wait` (RFC 7240, docs/contract.md §2): a payment answer held until the payment is terminal or
// the wait is over.
#include "http/api.h"

#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <memory>
#include <mutex>

#include "store/payments.h"

namespace payorch::http {
namespace {

// One `Prefer: wait=N` answer: waits for the payment to become terminal or for the deadline,
// whichever is first. Every check re-reads the committed row, so the answer is what the
// database says. Lives until it has answered (the timers and the subscription hold it).
//
// This daemon's own changes are announced (ChangeNotifier); those another payorchd commits on a
// shared database (PostgreSQL, several nodes) are not, so the row is also re-read every
// recheck_every, and once more at the deadline.
constexpr std::chrono::milliseconds recheck_every{250};
class PaymentWait : public std::enable_shared_from_this<PaymentWait> {
public:
  using Answer = std::function<void(const Payment&)>;
  PaymentWait(const ApiDeps& deps, Payment payment, std::chrono::seconds wait, Answer answer)
      : deps_(deps),
        strand_(boost::asio::make_strand(deps.executor)),
        last_(std::move(payment)),
        timer_(strand_, wait),
        recheck_(strand_),
        answer_(std::move(answer)) {}

  void start() {
    auto self = shared_from_this();
    timer_.async_wait([self](boost::system::error_code ec) {
      if (!ec) self->check(true);
    });
    schedule_recheck();
    // Subscribe before the first re-read, so a change between the two is not missed.
    subscribe();
    boost::asio::post(strand_, [self] { self->check(); });
  }

private:
  void subscribe() {
    std::lock_guard lock(mu_);
    if (answered_ || subscribed_) return;
    subscribed_ = true;
    auto self = shared_from_this();
    token_ = deps_.changes.subscribe(last_.id, [self] {
      {
        std::lock_guard l(self->mu_);
        self->subscribed_ = false;
      }
      boost::asio::post(self->strand_, [self] { self->check(); });
    });
  }

  void schedule_recheck() {
    recheck_.expires_after(recheck_every);
    recheck_.async_wait([self = shared_from_this()](boost::system::error_code ec) {
      if (ec) return;
      self->check();
      if (!self->answered()) self->schedule_recheck();
    });
  }

  bool answered() {
    std::lock_guard lock(mu_);
    return answered_;
  }

  void check(bool deadline = false) {
    try {
      auto p = deps_.store.read_value([&](store::Tx& tx) { return tx.find_payment_by_id(last_.id); });
      std::lock_guard lock(mu_);
      if (p) last_ = *p;
    } catch (const std::exception&) {
      // Keep the last view; the deadline still answers.
    }
    finish(deadline);
  }

  void finish(bool deadline) {
    std::optional<Payment> answer;
    {
      std::lock_guard lock(mu_);
      if (answered_) return;
      if (deadline || is_terminal(last_.state)) {
        answered_ = true;
        if (subscribed_) deps_.changes.cancel(last_.id, token_);
        subscribed_ = false;
        answer = last_;
      }
    }
    if (!answer) return subscribe();  // not terminal yet: listen for the next change
    timer_.cancel();
    recheck_.cancel();
    answer_(*answer);
  }

  // The timer, checks and the answer all run on this strand.
  const ApiDeps& deps_;
  boost::asio::strand<boost::asio::any_io_executor> strand_;
  std::mutex mu_;
  Payment last_;
  bool answered_ = false;
  bool subscribed_ = false;
  std::uint64_t token_ = 0;
  boost::asio::steady_timer timer_;
  boost::asio::steady_timer recheck_;
  Answer answer_;
};

}  // namespace

void Api::answer_when_settled(const Payment& payment, int wait_s,
                              std::function<Response(const Payment&)> build, Responder done) {
  auto answer = [wait_s, build = std::move(build), done = std::move(done)](const Payment& p) {
    Response r = build(p);
    if (wait_s > 0) r.set("Preference-Applied", "wait=" + std::to_string(wait_s));
    done(std::move(r));
  };
  if (wait_s <= 0 || is_terminal(payment.state)) return answer(payment);
  std::make_shared<PaymentWait>(deps_, payment, std::chrono::seconds(wait_s), std::move(answer))->start();
}
}  // namespace payorch::http
