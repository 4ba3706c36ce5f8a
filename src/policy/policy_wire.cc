// Binary policy decoding without libprotobuf. See policy_wire.h; the field
// numbers are proto/policy.proto's.
#include "swapplan/policy/policy_wire.h"

#include <cstdint>
#include <cstring>
#include <limits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "swapplan/util/error.h"
#include "swapplan/util/utf8.h"

namespace swapplan {
namespace {

constexpr absl::string_view kPolicyFormat = "swapplan-policy";

enum WireType : uint32_t { kVarint = 0, kFixed64 = 1, kBytes = 2, kFixed32 = 5 };

int32_t Clamp32(uint64_t v) {
  const uint32_t u = static_cast<uint32_t>(v);  // proto uint32: low 32 bits
  return u > static_cast<uint32_t>(std::numeric_limits<int32_t>::max())
             ? std::numeric_limits<int32_t>::max()
             : static_cast<int32_t>(u);
}

// One message's bytes; every read reports failure instead of throwing.
class Reader {
 public:
  Reader(absl::string_view bytes, size_t base) : p_(bytes.data()), end_(p_ + bytes.size()), base_(base), begin_(p_) {}

  bool done() const { return p_ == end_; }
  size_t offset() const { return base_ + static_cast<size_t>(p_ - begin_); }

  bool Varint(uint64_t* v) {
    uint64_t r = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (p_ == end_) return false;
      const uint8_t b = static_cast<uint8_t>(*p_++);
      r |= static_cast<uint64_t>(b & 0x7f) << shift;
      if ((b & 0x80) == 0) {
        *v = r;
        return true;
      }
    }
    return false;
  }
  bool Fixed64(uint64_t* v) {
    if (end_ - p_ < 8) return false;
    uint64_t r = 0;
    for (int i = 7; i >= 0; --i) r = (r << 8) | static_cast<uint8_t>(p_[i]);
    p_ += 8;
    *v = r;
    return true;
  }
  bool Bytes(absl::string_view* out, size_t* at) {
    uint64_t n;
    if (!Varint(&n) || n > static_cast<uint64_t>(end_ - p_)) return false;
    *at = offset();
    *out = absl::string_view(p_, static_cast<size_t>(n));
    p_ += n;
    return true;
  }
  bool Tag(uint32_t* field, uint32_t* type) {
    uint64_t t;
    if (!Varint(&t) || (t >> 3) == 0 || (t >> 3) > 0x1fffffff) return false;
    *field = static_cast<uint32_t>(t >> 3);
    *type = static_cast<uint32_t>(t & 7);
    return true;
  }
  bool Skip(uint32_t type) {
    uint64_t v;
    absl::string_view s;
    size_t at;
    switch (type) {
      case kVarint:
        return Varint(&v);
      case kFixed64:
        return Fixed64(&v);
      case kBytes:
        return Bytes(&s, &at);
      case kFixed32:
        if (end_ - p_ < 4) return false;
        p_ += 4;
        return true;
      default:
        return false;  // groups are not used by swapplan
    }
  }

 private:
  const char* p_;
  const char* end_;
  size_t base_;
  const char* begin_;
};

// Decodes one message: `on_field(reader, field, type)` handles known fields
// (returns false for a malformed value); others are skipped.
class Decoder {
 public:
  Decoder() = default;

  template <typename F>
  bool Message(absl::string_view bytes, size_t base, F&& on_field) {
    Reader r(bytes, base);
    while (!r.done()) {
      uint32_t field, type;
      const size_t at = r.offset();
      if (!r.Tag(&field, &type)) return Fail(at);
      const int handled = on_field(r, field, type);
      if (handled < 0) return Fail(at);
      if (handled == 0 && !r.Skip(type)) return Fail(at);
    }
    return true;
  }

  // Field readers: 1 = read, -1 = malformed, 0 = another wire type than
  // the field's: skipped as an unknown field (what protobuf does).
  static int U64(Reader& r, uint32_t type, uint64_t* v) {
    if (type != kVarint) return 0;
    return r.Varint(v) ? 1 : -1;
  }
  static int I64(Reader& r, uint32_t type, int64_t* v) {
    uint64_t u;
    if (type != kVarint) return 0;
    if (!r.Varint(&u)) return -1;
    *v = static_cast<int64_t>(u);
    return 1;
  }
  static int I32(Reader& r, uint32_t type, int32_t* v) {
    uint64_t u;
    if (type != kVarint) return 0;
    if (!r.Varint(&u)) return -1;
    *v = static_cast<int32_t>(static_cast<uint32_t>(u));
    return 1;
  }
  static int U32(Reader& r, uint32_t type, int32_t* v) {
    uint64_t u;
    if (type != kVarint) return 0;
    if (!r.Varint(&u)) return -1;
    *v = Clamp32(u);
    return 1;
  }
  static int Bool(Reader& r, uint32_t type, bool* v) {
    uint64_t u;
    if (type != kVarint) return 0;
    if (!r.Varint(&u)) return -1;
    *v = u != 0;
    return 1;
  }
  static int F64(Reader& r, uint32_t type, uint64_t* v) {
    if (type != kFixed64) return 0;
    return r.Fixed64(v) ? 1 : -1;
  }
  static int Double(Reader& r, uint32_t type, double* v) {
    uint64_t u;
    if (type != kFixed64) return 0;
    if (!r.Fixed64(&u)) return -1;
    std::memcpy(v, &u, sizeof u);
    return 1;
  }
  static int Str(Reader& r, uint32_t type, std::string* v) {
    absl::string_view s;
    size_t at;
    if (type != kBytes) return 0;
    if (!r.Bytes(&s, &at)) return -1;
    v->assign(s.data(), s.size());
    return 1;
  }
  // A repeated varint field, packed or not; `add` takes each raw value.
  template <typename Add>
  static int Repeated(Reader& r, uint32_t type, Add&& add) {
    if (type == kVarint) {
      uint64_t u;
      if (!r.Varint(&u)) return -1;
      add(u);
      return 1;
    }
    if (type != kBytes) return 0;
    absl::string_view s;
    size_t at;
    if (!r.Bytes(&s, &at)) return -1;
    Reader inner(s, at);
    while (!inner.done()) {
      uint64_t u;
      if (!inner.Varint(&u)) return -1;
      add(u);
    }
    return 1;
  }
  // A sub-message: `decode(bytes, base)` returns false when malformed.
  template <typename F>
  static int Sub(Reader& r, uint32_t type, F&& decode) {
    absl::string_view s;
    size_t at;
    if (type != kBytes) return 0;
    if (!r.Bytes(&s, &at)) return -1;
    return decode(s, at) ? 1 : -1;
  }

  bool Fail(size_t at) {
    if (failed_at_ == std::string::npos) failed_at_ = at;
    return false;
  }
  size_t failed_at() const { return failed_at_; }

 private:
  size_t failed_at_ = std::string::npos;
};

struct Raw {
  std::string format;
  uint64_t format_version = 0;
  bool has_device = false;
  bool has_runtime = false;
  // The v1 fields, as written.
  int64_t budget = 0;
  double h2d = 0;
  double d2h = 0;
  int32_t bad_action = -1;   // first item with an unknown action
  std::string bad_anchor;    // first anchor with an unknown phase ("runtime.items[3].release")
  int32_t bad_phase = 0;
  int32_t bad_name = -1;     // first op name that is not UTF-8
};

// Field values absent from a message are protobuf's defaults (0, "",
// FORWARD), whatever the C++ struct's defaults are.
constexpr OpAnchor kProtoAnchor{Phase::kForward, 0, 0};

int Anchor(Decoder& d, Reader& r, uint32_t type, OpAnchor* a, Raw* raw,
           const std::string& field) {
  return Decoder::Sub(r, type, [&](absl::string_view s, size_t at) {
    return d.Message(s, at, [&](Reader& rr, uint32_t f, uint32_t t) -> int {
      int32_t v;
      switch (f) {
        case 1:
          if (const int got = Decoder::I32(rr, t, &v); got <= 0) return got;
          if (v < 0 || v >= kNumPhases) {
            if (raw->bad_anchor.empty()) {
              raw->bad_anchor = field;
              raw->bad_phase = v;
            }
          } else {
            a->phase = static_cast<Phase>(v);
          }
          return 1;
        case 2:
          return Decoder::U32(rr, t, &a->phase_ordinal);
        case 3:
          return Decoder::U32(rr, t, &a->ordinal);
        default:
          return 0;
      }
    });
  });
}

int Key(Decoder& d, Reader& r, uint32_t type, RuntimeKey* k) {
  return Decoder::Sub(r, type, [&](absl::string_view s, size_t at) {
    return d.Message(s, at, [&](Reader& rr, uint32_t f, uint32_t t) -> int {
      uint64_t u;
      int32_t v;
      switch (f) {
        case 1:
          if (const int got = Decoder::U64(rr, t, &u); got <= 0) return got;
          k->op_count = static_cast<uint32_t>(u);
          return 1;
        case 2:
          return Decoder::F64(rr, t, &k->op_mask);
        case 3:
          return Decoder::F64(rr, t, &k->op_history);
        case 4:
          if (const int got = Decoder::I32(rr, t, &v); got <= 0) return got;
          k->dtype = v >= 0 && v < kNumDTypes ? static_cast<DType>(v) : DType::kUnknown;
          return 1;
        case 5:
          return Decoder::I64(rr, t, &k->size_bytes);
        case 6:
          return Decoder::Repeated(rr, t, [&](uint64_t x) { k->shape.push_back(static_cast<int64_t>(x)); });
        case 7:
          if (const int got = Decoder::U64(rr, t, &u); got <= 0) return got;
          k->mask_bits = static_cast<uint32_t>(u);
          return 1;
        default:
          return 0;
      }
    });
  });
}

int Item(Decoder& d, Reader& r, uint32_t type, Policy* p, Raw* raw) {
  return Decoder::Sub(r, type, [&](absl::string_view s, size_t at) {
    PolicyItem it;
    it.runtime_key.mask_bits = 0;
    const bool ok = d.Message(s, at, [&](Reader& rr, uint32_t f, uint32_t t) -> int {
      int32_t v;
      switch (f) {
        case 1:
          return Decoder::U64(rr, t, &it.tensor_id);
        case 2:
          return Key(d, rr, t, &it.runtime_key);
        case 3:
          return Decoder::U32(rr, t, &it.swap_out_op);
        case 4:
          return Decoder::U32(rr, t, &it.release_op);
        case 5:
          return Decoder::U32(rr, t, &it.swap_in_op);
        case 6:
          return Decoder::U32(rr, t, &it.first_use_op);
        case 7:
          return Decoder::I64(rr, t, &it.size_bytes);
        case 8:
          if (const int got = Decoder::I32(rr, t, &v); got <= 0) return got;
          if (v != 0 && v != 1) {
            if (raw->bad_action < 0) raw->bad_action = static_cast<int32_t>(p->items.size());
          } else {
            it.action = static_cast<ItemAction>(v);
          }
          return 1;
        case 9:
          return Decoder::I64(rr, t, &it.recompute_ns);
        case 10:
          return Decoder::Bool(rr, t, &it.release_waits_for_copy);
        case 11:
          return Decoder::Bool(rr, t, &it.wraps);
        case 12:
          return Decoder::Bool(rr, t, &it.clean);
        case 13:
          return Decoder::U32(rr, t, &it.tier);
        default:
          return 0;
      }
    });
    if (ok) p->items.push_back(std::move(it));
    return ok;
  });
}

int Device(Decoder& d, Reader& r, uint32_t type, DeviceModel* m) {
  return Decoder::Sub(r, type, [&](absl::string_view s, size_t at) {
    m->name.clear();
    m->copy_engines = 0;
    m->compute_time_scale = 0;
    return d.Message(s, at, [&](Reader& rr, uint32_t f, uint32_t t) -> int {
      switch (f) {
        case 1:
          return Decoder::Str(rr, t, &m->name);
        case 2:
          return Decoder::I64(rr, t, &m->capacity_bytes);
        case 3:
          return Decoder::I64(rr, t, &m->reserve_bytes);
        case 4:
          return Decoder::Double(rr, t, &m->h2d_bandwidth_bytes_per_s);
        case 5:
          return Decoder::Double(rr, t, &m->d2h_bandwidth_bytes_per_s);
        case 6:
          return Decoder::I64(rr, t, &m->copy_latency_ns);
        case 7:
          return Decoder::U32(rr, t, &m->copy_engines);
        case 8:
          return Decoder::Double(rr, t, &m->compute_time_scale);
        case 9:
          return Decoder::Double(rr, t, &m->peak_flops_per_s);
        case 10:
          return Decoder::Double(rr, t, &m->memory_bandwidth_bytes_per_s);
        case 11:
          return Decoder::Double(rr, t, &m->interconnect_bandwidth_bytes_per_s);
        case 12:
          return Decoder::Sub(rr, t, [&](absl::string_view ts, size_t tat) {
            MemoryTier tier;
            tier.capacity_bytes = 0;
            tier.shared_by_ranks = 0;
            const bool ok = d.Message(ts, tat, [&](Reader& tr, uint32_t tf, uint32_t tt) -> int {
              switch (tf) {
                case 1:
                  return Decoder::Str(tr, tt, &tier.name);
                case 2:
                  return Decoder::I64(tr, tt, &tier.capacity_bytes);
                case 3:
                  return Decoder::Double(tr, tt, &tier.store_bandwidth_bytes_per_s);
                case 4:
                  return Decoder::Double(tr, tt, &tier.load_bandwidth_bytes_per_s);
                case 5:
                  return Decoder::I64(tr, tt, &tier.latency_ns);
                case 6:
                  return Decoder::U32(tr, tt, &tier.shared_by_ranks);
                default:
                  return 0;
              }
            });
            if (ok) m->tiers.push_back(std::move(tier));
            return ok;
          });
        default:
          return 0;
      }
    });
  });
}

int Runtime(Decoder& d, Reader& r, uint32_t type, PolicyRuntime* rt, Raw* raw) {
  return Decoder::Sub(r, type, [&](absl::string_view s, size_t at) {
    rt->mask_bits = 0;
    return d.Message(s, at, [&](Reader& rr, uint32_t f, uint32_t t) -> int {
      uint64_t u;
      switch (f) {
        case 1: {
          std::string name;
          if (const int got = Decoder::Str(rr, t, &name); got <= 0) return got;
          if (raw->bad_name < 0 && !IsValidUtf8(name)) {
            raw->bad_name = static_cast<int32_t>(rt->op_names.size());
          }
          rt->op_names.push_back(std::move(name));
          return 1;
        }
        case 2:  // sint32: zigzag
          return Decoder::Repeated(rr, t, [&](uint64_t x) {
            const uint32_t z = static_cast<uint32_t>(x);
            rt->op_ranks.push_back(static_cast<int32_t>((z >> 1) ^ (~(z & 1) + 1)));
          });
        case 3:
          if (const int got = Decoder::U64(rr, t, &u); got <= 0) return got;
          rt->mask_bits = Clamp32(u);
          return 1;
        case 4:
          return Decoder::Repeated(
              rr, t, [&](uint64_t x) { rt->op_sequence.push_back(static_cast<uint32_t>(x)); });
        case 5:
          return Decoder::Sub(rr, t, [&](absl::string_view is, size_t iat) {
            RuntimeItem item;
            item.decision = item.release = item.swap_in = item.first_use = kProtoAnchor;
            const std::string base = absl::StrCat("runtime.items[", rt->items.size(), "]");
            const bool ok = d.Message(is, iat, [&](Reader& ir, uint32_t fi, uint32_t ti) -> int {
              switch (fi) {
                case 1:
                  return Anchor(d, ir, ti, &item.decision, raw, base + ".decision");
                case 2:
                  return Decoder::U32(ir, ti, &item.use_index);
                case 3:
                  return Decoder::F64(ir, ti, &item.shape_hash);
                case 4:
                  return Anchor(d, ir, ti, &item.release, raw, base + ".release");
                case 5:
                  return Anchor(d, ir, ti, &item.swap_in, raw, base + ".swap_in");
                case 6:
                  return Anchor(d, ir, ti, &item.first_use, raw, base + ".first_use");
                default:
                  return 0;
              }
            });
            if (ok) rt->items.push_back(item);
            return ok;
          });
        default:
          return 0;
      }
    });
  });
}

int Pool(Decoder& d, Reader& r, uint32_t type, MemoryPool* pool) {
  return Decoder::Sub(r, type, [&](absl::string_view s, size_t at) {
    return d.Message(s, at, [&](Reader& rr, uint32_t f, uint32_t t) -> int {
      switch (f) {
        case 1:
          return Decoder::Repeated(
              rr, t, [&](uint64_t x) { pool->tensor_sizes.push_back(static_cast<int64_t>(x)); });
        case 2:
          return Decoder::Repeated(rr, t, [&](uint64_t x) { pool->size_class.push_back(Clamp32(x)); });
        case 3:
          return Decoder::Sub(rr, t, [&](absl::string_view cs, size_t cat) {
            PoolClass c;
            const bool ok = d.Message(cs, cat, [&](Reader& cr, uint32_t cf, uint32_t ct) -> int {
              switch (cf) {
                case 1:
                  return Decoder::I64(cr, ct, &c.object_bytes);
                case 2:
                  return Decoder::U32(cr, ct, &c.count);
                default:
                  return 0;
              }
            });
            if (ok) pool->classes.push_back(c);
            return ok;
          });
        default:
          return 0;
      }
    });
  });
}

}  // namespace

absl::StatusOr<Policy> ParsePolicyWire(absl::string_view bytes, const std::string& source) {
  Decoder d;
  Policy p;
  Raw raw;
  const bool ok = d.Message(bytes, 0, [&](Reader& r, uint32_t f, uint32_t t) -> int {
    uint64_t u;
    switch (f) {
      case 1:
        return Decoder::Str(r, t, &raw.format);
      case 2:
        if (const int got = Decoder::U64(r, t, &u); got <= 0) return got;
        raw.format_version = static_cast<uint32_t>(u);
        return 1;
      case 3:
        return Decoder::Sub(r, t, [&](absl::string_view s, size_t at) {
          return d.Message(s, at, [&](Reader& rr, uint32_t ff, uint32_t tt) -> int {
            switch (ff) {
              case 1:
                return Decoder::F64(rr, tt, &p.fingerprint.op_sequence_hash);
              case 2:
                return Decoder::U32(rr, tt, &p.fingerprint.iteration_ops);
              case 3:
                return Decoder::U32(rr, tt, &p.fingerprint.iteration);
              default:
                return 0;
            }
          });
        });
      case 4:
        return Decoder::I64(r, t, &raw.budget);
      case 5:
        return Decoder::Double(r, t, &raw.h2d);
      case 6:
        return Decoder::Double(r, t, &raw.d2h);
      case 7:
        return Decoder::Str(r, t, &p.planner);
      case 8:
        return Decoder::Sub(r, t, [&](absl::string_view s, size_t at) {
          std::string name, value;
          const bool good = d.Message(s, at, [&](Reader& rr, uint32_t ff, uint32_t tt) -> int {
            if (ff == 1) return Decoder::Str(rr, tt, &name);
            if (ff == 2) return Decoder::Str(rr, tt, &value);
            return 0;
          });
          if (good) p.parameters.emplace_back(std::move(name), std::move(value));
          return good;
        });
      case 9:
        return Decoder::I64(r, t, &p.expected_peak_bytes);
      case 10:
        return Decoder::I64(r, t, &p.expected_overhead_ns);
      case 11:
        return Decoder::I64(r, t, &p.simulated_iteration_time_ns);
      case 12:
        return Item(d, r, t, &p, &raw);
      case 13:
        return Decoder::Repeated(r, t, [&](uint64_t x) { p.schedule.push_back(Clamp32(x)); });
      case 14:
        return Pool(d, r, t, &p.pool);
      case 15:
        if (t == kBytes) raw.has_device = true;
        return Device(d, r, t, &p.device);
      case 16:
        if (t == kBytes) raw.has_runtime = true;
        return Runtime(d, r, t, &p.runtime, &raw);
      default:
        return 0;
    }
  });
  // From here on, FromProto's rules (src/policy/policy_proto.cc), in its
  // order: the same policy, or the same error.
  auto malformed = [&](absl::string_view what) {
    return Error(ErrorKind::kMalformedInput, absl::StrCat(source, ": ", what));
  };
  if (!ok) {
    return malformed(absl::StrCat("not a binary swapplan policy (truncated or corrupt at byte ",
                                  d.failed_at() == std::string::npos ? 0 : d.failed_at(), ")"));
  }
  if (raw.format != kPolicyFormat) {
    return malformed(absl::StrCat("not a swapplan policy (format is '",
                                       EscapeForMessage(raw.format), "')"));
  }
  if (raw.format_version != 1 && raw.format_version != 2) {
    return malformed(absl::StrCat("policy format version ", raw.format_version,
                                  " is not supported (this swapplan reads 1 and 2)"));
  }
  bool text_ok = IsValidUtf8(p.planner);
  for (const auto& [k, v] : p.parameters) text_ok = text_ok && IsValidUtf8(k) && IsValidUtf8(v);
  if (!text_ok) return malformed("planner text is not valid UTF-8");
  p.format_version = static_cast<int32_t>(raw.format_version);
  if (raw.format_version == 1) {
    if (raw.has_device || raw.has_runtime) {
      return malformed("a format_version 1 policy has a v2 section (device or runtime)");
    }
    p.device = DeviceModel{};
    p.device.capacity_bytes = raw.budget;
    p.device.h2d_bandwidth_bytes_per_s = raw.h2d;
    p.device.d2h_bandwidth_bytes_per_s = raw.d2h;
    p.runtime = PolicyRuntime{};
    for (size_t k = 0; k < p.items.size(); ++k) {
      if (p.items[k].tier != 0) {
        return malformed(absl::StrCat("policy item ", k, " (tensor ", p.items[k].tensor_id,
                                      ") names tier ", p.items[k].tier,
                                      ", a format_version 2 field"));
      }
    }
  } else {
    if (!raw.has_device) return malformed("a format_version 2 policy needs a device");
    const int64_t budget = p.device.BudgetBytes();
    if (raw.budget != 0 && raw.budget != budget) {
      return malformed(absl::StrCat("device_budget_bytes ", raw.budget,
                                    " disagrees with the device model's budget ", budget));
    }
    if (raw.h2d != 0 && raw.h2d != p.device.h2d_bandwidth_bytes_per_s) {
      return malformed(absl::StrCat("h2d_bandwidth_bytes_per_s ", raw.h2d,
                                    " disagrees with the device model's ",
                                    p.device.h2d_bandwidth_bytes_per_s));
    }
    if (raw.d2h != 0 && raw.d2h != p.device.d2h_bandwidth_bytes_per_s) {
      return malformed(absl::StrCat("d2h_bandwidth_bytes_per_s ", raw.d2h,
                                    " disagrees with the device model's ",
                                    p.device.d2h_bandwidth_bytes_per_s));
    }
    if (raw.has_runtime) {
      if (raw.bad_name >= 0) {
        return malformed(absl::StrCat("runtime.op_names[", raw.bad_name, "] is not valid UTF-8"));
      }
      if (!raw.bad_anchor.empty()) {
        return malformed(absl::StrCat(raw.bad_anchor, ".phase: unknown phase ", raw.bad_phase));
      }
    }
  }
  if (raw.bad_action >= 0) {
    return malformed(absl::StrCat("policy item ", raw.bad_action, " (tensor ",
                                  p.items[raw.bad_action].tensor_id, "): unknown action"));
  }
  if (absl::Status st = p.Validate(); !st.ok()) return malformed(st.message());
  return p;
}

}  // namespace swapplan
