#include "bench/seed.h"

#include <fcntl.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <optional>
#include <stdexcept>

#include "core/digest.h"
#include "core/ids.h"
#include "core/intent.h"
#include "store/database.h"
#include "store/sqlite.h"
#include "util/os_random.h"

namespace payorch::bench {
namespace {

constexpr std::array<std::pair<SeedKind, std::string_view>, 5> kind_names{{
    {SeedKind::processing, "processing"},
    {SeedKind::in_flight, "in_flight"},
    {SeedKind::unknown, "unknown"},
    {SeedKind::succeeded, "succeeded"},
    {SeedKind::failed_final, "failed_final"},
}};

// Every column but the generated ones, named: a schema change that adds a required column
// fails here loudly instead of seeding rows the daemon would misread. Several rows per
// statement: the per-statement work (the triggers' statement journal, cursors) is paid once.
constexpr std::string_view insert_columns =
    "INSERT INTO payments (id, tenant_id, operation_type, operation_id, provider, client_key,"
    " request_digest, amount_minor, currency, payee, source, description, metadata, state,"
    " next_action, next_attempt_at, fence, lease_owner, lease_expires_at, attempt_count,"
    " first_submit_at, last_submit_started_at, last_submit_ended_at, vendor_reference,"
    " failure_code, failure_message, created_at, updated_at, budget_started_at,"
    " budget_attempts_base) VALUES ";
constexpr std::string_view insert_row =
    "(?,?,'payment',?,?,?,?,?,?,?,?,NULL,'{}',?,?,?,?,NULL,NULL,?,?,?,?,?,?,?,?,?,NULL,0)";
constexpr int params_per_row = 23;
constexpr std::int64_t rows_per_statement = 64;

std::string insert_sql(std::int64_t rows) {
  std::string sql(insert_columns);
  for (std::int64_t r = 0; r < rows; ++r) {
    if (r > 0) sql += ',';
    sql += insert_row;
  }
  return sql;
}

// Submits start this long after intake, and answered ones end this long after they started.
constexpr UnixMillis submit_delay_ms = 10;
constexpr UnixMillis answer_ms = 20;
// An UNKNOWN payment's first recovery query is due this long after its submit ended.
constexpr UnixMillis recovery_backoff_ms = 1'000;

// splitmix64's finaliser: independent-looking picks from a row number and a salt.
std::uint64_t mix(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

template <class T>
const T& pick(const std::vector<T>& from, std::int64_t row, std::uint64_t salt) {
  return from[mix(static_cast<std::uint64_t>(row) ^ (salt << 48)) % from.size()];
}

std::uint64_t os_seed() {
  OsRandom os;
  std::array<std::uint8_t, 8> b{};
  os.fill(b);
  std::uint64_t v = 0;
  for (auto x : b) v = (v << 8) | x;
  return v == 0 ? 1 : v;
}

// The kinds dealt out in order: weights {a=2, b=1} give a, a, b, a, a, b, ...
std::vector<SeedKind> cycle_of(const std::vector<std::pair<SeedKind, int>>& mix) {
  std::vector<SeedKind> cycle;
  for (const auto& [kind, weight] : mix) cycle.insert(cycle.end(), static_cast<std::size_t>(weight), kind);
  if (cycle.empty()) throw std::invalid_argument("the mix has no rows");
  return cycle;
}

void fsync_file(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw std::runtime_error("open " + path + ": " + std::strerror(errno));
  const int rc = ::fsync(fd);
  const int err = errno;
  ::close(fd);
  if (rc != 0) throw std::runtime_error("fsync " + path + ": " + std::strerror(err));
}

struct Row {
  std::string state;
  std::string next_action;
  UnixMillis next_attempt_at = 0;
  std::int64_t fence = 0;
  std::int64_t attempt_count = 0;
  std::optional<UnixMillis> submit_started_at;  // also first_submit_at
  std::optional<UnixMillis> submit_ended_at;
  bool vendor_answered = false;  // a vendor reference exists
  std::optional<std::string> failure_code;
  std::optional<std::string> failure_message;
  UnixMillis updated_at = 0;
};

// The progress columns of one row, as the engine would have left them.
Row progress(SeedKind kind, UnixMillis created, UnixMillis now, const SeedSpec& spec) {
  Row r;
  const UnixMillis started = created + submit_delay_ms;
  const UnixMillis ended = started + answer_ms;
  auto due = [&](UnixMillis natural) {
    return spec.due_in.count() > 0 ? now + spec.due_in.count() : std::min(natural, now);
  };
  r.updated_at = created;
  if (kind != SeedKind::processing) {
    r.fence = 1;  // claimed once; the lease is gone
    r.attempt_count = 1;
    r.submit_started_at = started;
    r.updated_at = started;
  }
  switch (kind) {
    case SeedKind::processing:
      r.state = "PROCESSING";
      r.next_action = "submit";
      r.next_attempt_at = due(created);
      break;
    case SeedKind::in_flight:
      r.state = "PROCESSING";
      r.next_action = "submit";
      r.next_attempt_at = due(started + spec.lease.count());
      break;
    case SeedKind::unknown:
      r.state = "UNKNOWN";
      r.next_action = "query";
      r.submit_ended_at = ended;
      r.next_attempt_at = due(ended + recovery_backoff_ms);
      r.updated_at = ended;
      break;
    case SeedKind::succeeded:
    case SeedKind::failed_final:
      r.state = kind == SeedKind::succeeded ? "SUCCEEDED" : "FAILED_FINAL";
      r.next_action = "none";
      r.submit_ended_at = ended;
      r.next_attempt_at = ended;
      r.vendor_answered = true;
      if (kind == SeedKind::failed_final) {
        r.failure_code = "insufficient_funds";
        r.failure_message = "declined: insufficient_funds";
      }
      r.updated_at = ended;
      break;
  }
  return r;
}

}  // namespace

std::string seeded_operation_id(const std::string& prefix, std::int64_t row) {
  char digits[24];
  std::snprintf(digits, sizeof digits, "%012lld", static_cast<long long>(row));
  return prefix + digits;
}

std::string_view to_string(SeedKind k) {
  for (const auto& [kind, name] : kind_names)
    if (kind == k) return name;
  return "?";
}

std::vector<std::pair<SeedKind, int>> parse_mix(std::string_view text) {
  std::vector<std::pair<SeedKind, int>> out;
  while (!text.empty()) {
    const std::size_t comma = text.find(',');
    const std::string_view item = text.substr(0, comma);
    text = comma == std::string_view::npos ? std::string_view{} : text.substr(comma + 1);
    const std::size_t eq = item.find('=');
    const std::string_view name = item.substr(0, eq);
    int weight = 1;
    if (eq != std::string_view::npos) {
      const std::string_view w = item.substr(eq + 1);
      const auto [end, ec] = std::from_chars(w.data(), w.data() + w.size(), weight);
      if (w.empty() || ec != std::errc() || end != w.data() + w.size() || weight < 0 || weight > 1000)
        throw std::invalid_argument("mix: \"" + std::string(item) + "\": the weight must be 0..1000");
    }
    bool known = false;
    for (const auto& [kind, kind_name] : kind_names) {
      if (kind_name != name) continue;
      known = true;
      if (weight > 0) out.emplace_back(kind, weight);
    }
    if (!known)
      throw std::invalid_argument("mix: unknown state \"" + std::string(name) +
                                  "\" (processing, in_flight, unknown, succeeded, failed_final)");
  }
  if (out.empty()) throw std::invalid_argument("mix: no state has a weight above 0");
  return out;
}

SeedReport seed_payments(const std::string& path, const SeedSpec& spec, UnixMillis now,
                         const std::function<void(std::int64_t rows)>& progress_cb) {
  if (spec.tenants.empty() || spec.providers.empty() || spec.currencies.empty())
    throw std::invalid_argument("seed: tenants, providers and currencies must not be empty");
  const auto started = std::chrono::steady_clock::now();
  const std::vector<SeedKind> cycle = cycle_of(spec.mix);
  SeededRandom rng(spec.random_seed != 0 ? spec.random_seed : os_seed());
  SeedReport report;

  store::prepare_database(path, now);  // the daemon's own opening: migrations applied, WAL
  {
    store::Db db(path, store::Db::Mode::read_write);
    // The seeding connection only: no fsync per commit and the rollback journal in memory.
    // Nobody else uses the file meanwhile; it is synced once at the end.
    db.exec("PRAGMA journal_mode=OFF");
    db.exec("PRAGMA synchronous=OFF");
    db.exec("PRAGMA temp_store=MEMORY");
    db.exec("PRAGMA cache_size=-" + std::to_string(spec.cache_mib * 1024));
    db.exec("PRAGMA foreign_keys=ON");

    const std::string& default_provider = spec.providers.front();
    // Binds row `i` as the `slot`-th row of a multi-row INSERT.
    auto bind_row = [&](store::Stmt& st, int slot, std::int64_t i) {
      const SeedKind kind = cycle[static_cast<std::size_t>(i) % cycle.size()];
      const UnixMillis created = now - spec.spread.count() + spec.spread.count() * i / spec.count;
      const Row r = progress(kind, created, now, spec);

      Intent intent;
      intent.operation_id = seeded_operation_id(spec.operation_prefix, i);
      intent.amount_minor = 100 + static_cast<std::int64_t>(mix(static_cast<std::uint64_t>(i)) % 99'901);
      intent.currency = pick(spec.currencies, i, 1);
      intent.payee = "merchant-" + std::to_string(mix(static_cast<std::uint64_t>(i) ^ 0x5eed) % 1000);
      intent.source = kind == SeedKind::failed_final ? "tok_decline" : "tok_ok";
      const std::string& provider = pick(spec.providers, i, 2);
      // A payment of another provider than the default one named it in its request.
      if (provider != default_provider) intent.provider = provider;

      const int p = slot * params_per_row;
      st.bind(p + 1, new_payment_id(created, rng));
      st.bind(p + 2, pick(spec.tenants, i, 3));
      st.bind(p + 3, intent.operation_id);
      st.bind(p + 4, provider);
      st.bind(p + 5, new_client_key(rng));
      st.bind(p + 6, request_digest(intent));
      st.bind(p + 7, intent.amount_minor);
      st.bind(p + 8, intent.currency);
      st.bind(p + 9, intent.payee);
      st.bind(p + 10, intent.source);
      st.bind(p + 11, r.state);
      st.bind(p + 12, r.next_action);
      st.bind(p + 13, r.next_attempt_at);
      st.bind(p + 14, r.fence);
      st.bind(p + 15, r.attempt_count);
      st.bind(p + 16, r.submit_started_at);  // first_submit_at
      st.bind(p + 17, r.submit_started_at);
      st.bind(p + 18, r.submit_ended_at);
      if (r.vendor_answered) st.bind(p + 19, "ch_" + ulid(*r.submit_started_at, rng));
      else st.bind_null(p + 19);
      st.bind(p + 20, r.failure_code);
      st.bind(p + 21, r.failure_message);
      st.bind(p + 22, created);
      st.bind(p + 23, r.updated_at);
      ++report.by_kind[kind];
    };
    store::Stmt full = db.prepare(insert_sql(rows_per_statement));
    for (std::int64_t done = 0; done < spec.count;) {
      const std::int64_t end = std::min(spec.count, done + spec.rows_per_commit);
      store::Transaction tx(db);
      for (std::int64_t first = done; first < end; first += rows_per_statement) {
        const std::int64_t rows = std::min(rows_per_statement, end - first);
        std::optional<store::Stmt> tail;  // the last, shorter statement of a commit
        store::Stmt& st = rows == rows_per_statement ? full : tail.emplace(db.prepare(insert_sql(rows)));
        st.reset();
        for (std::int64_t i = first; i < first + rows; ++i) bind_row(st, static_cast<int>(i - first), i);
        st.run();
      }
      tx.commit();
      done = end;
      report.rows = done;
      if (progress_cb) progress_cb(done);
    }
    db.exec("PRAGMA journal_mode=WAL");  // as payorchd keeps it
  }
  // Nothing was synced while seeding: write it all back now, so that a benchmark started next
  // does not share the disk with the seeder's dirty pages.
  fsync_file(path);
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  return report;
}

}  // namespace payorch::bench
