// Island model: options, the wire format of migrants, and the in-process
// transport (islands.h).
#include "swapplan/planners/advisor/islands.h"

#include <barrier>
#include <cstring>
#include <mutex>

#include "absl/strings/str_cat.h"

namespace swapplan {

absl::Status IslandOptions::Validate() const {
  if (migration_interval < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "island options: migration_interval is ", migration_interval, "; must be >= 1"));
  }
  if (migrants < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("island options: migrants is ", migrants, "; must be >= 0"));
  }
  return absl::OkStatus();
}

uint64_t IslandSeed(uint64_t seed, int32_t rank) {
  if (rank == 0) return seed;
  uint64_t z = seed + 0x9e3779b97f4a7c15ULL * (static_cast<uint64_t>(rank) + 1);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

namespace {

// Little-endian fixed-width integers and length-prefixed byte strings.
class Writer {
 public:
  void U64(uint64_t v) {
    for (int b = 0; b < 8; ++b) out_.push_back(static_cast<char>((v >> (8 * b)) & 0xff));
  }
  void I32s(const std::vector<int32_t>& v) {
    U64(v.size());
    for (int32_t x : v) U64(static_cast<uint64_t>(static_cast<uint32_t>(x)));
  }
  void Bytes(absl::string_view s) {
    U64(s.size());
    out_.append(s.data(), s.size());
  }
  std::string Take() { return std::move(out_); }

 private:
  std::string out_;
};

class Reader {
 public:
  explicit Reader(absl::string_view in) : in_(in) {}
  bool U64(uint64_t* v) {
    if (in_.size() < 8) return false;
    *v = 0;
    for (int b = 0; b < 8; ++b) *v |= static_cast<uint64_t>(static_cast<uint8_t>(in_[b])) << (8 * b);
    in_.remove_prefix(8);
    return true;
  }
  bool I32s(std::vector<int32_t>* v) {
    uint64_t n = 0;
    if (!U64(&n) || n > in_.size() / 8) return false;
    v->resize(n);
    for (uint64_t i = 0; i < n; ++i) {
      uint64_t x = 0;
      U64(&x);
      (*v)[i] = static_cast<int32_t>(static_cast<uint32_t>(x));
    }
    return true;
  }
  bool Bytes(std::string* s) {
    uint64_t n = 0;
    if (!U64(&n) || n > in_.size()) return false;
    s->assign(in_.data(), n);
    in_.remove_prefix(n);
    return true;
  }
  bool done() const { return in_.empty(); }

 private:
  absl::string_view in_;
};

}  // namespace

std::string EncodeMigration(const Migration& m) {
  Writer w;
  w.U64(m.chromosomes.size());
  for (size_t i = 0; i < m.chromosomes.size(); ++i) {
    const Chromosome& c = m.chromosomes[i];
    w.I32s(c.schedule);
    w.I32s(c.alloc.cls);
    w.I32s(c.alloc.cnt);
    w.U64(static_cast<uint64_t>(i < m.times_ns.size() ? m.times_ns[i] : -1));
    if (c.hints) {
      w.Bytes(absl::string_view(reinterpret_cast<const char*>(c.hints->data()), c.hints->size()));
    } else {
      w.Bytes("");
    }
  }
  w.Bytes(m.elite);
  w.U64(static_cast<uint64_t>(m.elite_ns));
  return w.Take();
}

absl::StatusOr<Migration> DecodeMigration(absl::string_view bytes) {
  Reader r(bytes);
  Migration m;
  uint64_t n = 0;
  auto bad = [] { return absl::DataLossError("island migration: truncated or malformed message"); };
  if (!r.U64(&n) || n > bytes.size()) return bad();
  for (uint64_t i = 0; i < n; ++i) {
    Chromosome c;
    uint64_t t = 0;
    std::string hints;
    if (!r.I32s(&c.schedule) || !r.I32s(&c.alloc.cls) || !r.I32s(&c.alloc.cnt) || !r.U64(&t) ||
        !r.Bytes(&hints)) {
      return bad();
    }
    if (!hints.empty()) {
      c.hints = std::make_shared<std::vector<uint8_t>>(hints.begin(), hints.end());
    }
    m.chromosomes.push_back(std::move(c));
    m.times_ns.push_back(static_cast<int64_t>(t));
  }
  uint64_t elite_ns = 0;
  if (!r.Bytes(&m.elite) || !r.U64(&elite_ns) || !r.done()) return bad();
  m.elite_ns = static_cast<int64_t>(elite_ns);
  return m;
}

// --- in-process transport ----------------------------------------------------------

struct LocalIslands::Shared {
  explicit Shared(int32_t n) : n(n), sync(n), text(n), value(n) {}
  int32_t n;
  std::barrier<> sync;
  std::vector<std::string> text;
  std::vector<int64_t> value;
};

class LocalIslands::Island : public IslandTransport {
 public:
  Island(Shared* shared, int32_t rank) : shared_(shared), rank_(rank) {}
  int32_t rank() const override { return rank_; }
  int32_t size() const override { return shared_->n; }

  // Every collective: publish, wait for all, read, wait again (so that the
  // next collective does not overwrite what a slower island still reads).
  absl::StatusOr<std::string> Shift(std::string message) override {
    shared_->text[rank_] = std::move(message);
    shared_->sync.arrive_and_wait();
    std::string got = shared_->text[(rank_ + shared_->n - 1) % shared_->n];
    shared_->sync.arrive_and_wait();
    return got;
  }
  absl::StatusOr<int64_t> Min(int64_t value) override {
    shared_->value[rank_] = value;
    shared_->sync.arrive_and_wait();
    int64_t m = shared_->value[0];
    for (int64_t v : shared_->value) m = std::min(m, v);
    shared_->sync.arrive_and_wait();
    return m;
  }
  absl::StatusOr<bool> Any(bool value) override {
    absl::StatusOr<int64_t> m = Min(value ? 0 : 1);
    if (!m.ok()) return m.status();
    return *m == 0;
  }
  absl::StatusOr<std::string> Best(int64_t key, std::string message) override {
    shared_->value[rank_] = key;
    shared_->text[rank_] = std::move(message);
    shared_->sync.arrive_and_wait();
    int32_t best = 0;
    for (int32_t r = 1; r < shared_->n; ++r) {
      if (shared_->value[r] < shared_->value[best]) best = r;
    }
    std::string got = shared_->text[best];
    shared_->sync.arrive_and_wait();
    return got;
  }

 private:
  Shared* shared_;
  int32_t rank_;
};

LocalIslands::LocalIslands(int32_t n) : shared_(std::make_unique<Shared>(n)) {
  for (int32_t r = 0; r < n; ++r) islands_.push_back(std::make_unique<Island>(shared_.get(), r));
}

LocalIslands::~LocalIslands() = default;

IslandTransport* LocalIslands::island(int32_t rank) { return islands_[rank].get(); }

}  // namespace swapplan
