// Import throughput: writes a synthetic PyTorch execution trace (ET JSON,
// schema 1.1.0-chakra.0.0.4 layout) of about SIZE_MB megabytes to a file,
// then imports it with ReadAnyTrace and reports MB/s of JSON read and the
// process's peak resident memory. The file is written, not held: the
// import streams it.
//
//   import_bench [SIZE_MB=1024] [PATH=/tmp/swapplan_import_bench.json]
//   /usr/bin/time -v import_bench 1024      (peak RSS of the whole run)
//
// The trace: ProfilerStep#N iterations of a 24-layer MLP-like model, each
// layer a forward aten::linear (aten::t -> aten::transpose ->
// aten::as_strided, aten::addmm { aten::empty }) and aten::relu, the
// backward on the autograd thread (evaluate_function -> *Backward0 ->
// aten::mm, aten::threshold_backward, AccumulateGrad -> aten::add_), and an
// Optimizer.step# of aten::add_ per parameter; storage ids are recycled the
// way an allocator recycles addresses. Node records are as verbose as the
// real ones (op_schema, attrs with kernel fields), about 900 bytes each.
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "swapplan/import/import.h"

namespace {

class Writer {
 public:
  explicit Writer(FILE* f) : f_(f) {}
  int64_t bytes() const { return bytes_; }
  void Raw(const char* s) { bytes_ += std::fprintf(f_, "%s", s); }

  // One node; `in`/`out` are tensor storages (numel float32 elements).
  void Node(int64_t id, const char* name, int64_t parent, int64_t rf, int scope, int tid,
            int fw_tid, const std::vector<std::pair<int64_t, int64_t>>& in,
            const std::vector<std::pair<int64_t, int64_t>>& out) {
    bytes_ += std::fprintf(f_, "%s\n    {\n      \"id\": %lld, \"name\": \"%s\", \"ctrl_deps\": %lld,\n",
                           first_ ? "" : ",", static_cast<long long>(id), name,
                           static_cast<long long>(parent));
    first_ = false;
    IO("inputs", in, true);
    IO("outputs", out, false);
    bytes_ += std::fprintf(
        f_,
        "      \"attrs\": [{\"name\": \"rf_id\", \"type\": \"uint64\", \"value\": %lld},"
        "{\"name\": \"fw_parent\", \"type\": \"uint64\", \"value\": 0},"
        "{\"name\": \"seq_id\", \"type\": \"int64\", \"value\": -1},"
        "{\"name\": \"scope\", \"type\": \"uint64\", \"value\": %d},"
        "{\"name\": \"tid\", \"type\": \"uint64\", \"value\": %d},"
        "{\"name\": \"fw_tid\", \"type\": \"uint64\", \"value\": %d},"
        "{\"name\": \"op_schema\", \"type\": \"string\", \"value\": \"%s(Tensor self, Tensor "
        "mat1, Tensor mat2, *, Scalar beta=1, Scalar alpha=1) -> Tensor\"},"
        "{\"name\": \"kernel_backend\", \"type\": \"string\", \"value\": \"\"},"
        "{\"name\": \"kernel_file\", \"type\": \"string\", \"value\": \"\"}]\n    }",
        static_cast<long long>(rf), scope, tid, fw_tid, name);
  }

 private:
  void IO(const char* key, const std::vector<std::pair<int64_t, int64_t>>& t, bool scalars) {
    std::string values, shapes, types;
    for (size_t i = 0; i < t.size(); ++i) {
      char buf[160];
      std::snprintf(buf, sizeof(buf), "%s[%lld,%lld,0,%lld,4,\"cuda:0\"]", i ? "," : "",
                    static_cast<long long>(t[i].first + 7), static_cast<long long>(t[i].first),
                    static_cast<long long>(t[i].second));
      values += buf;
      std::snprintf(buf, sizeof(buf), "%s[%lld,16]", i ? "," : "",
                    static_cast<long long>(t[i].second / 16));
      shapes += buf;
      types += i ? ",\"Tensor(float)\"" : "\"Tensor(float)\"";
    }
    if (scalars) {
      values += t.empty() ? "1,1" : ",1,1";
      shapes += t.empty() ? "[],[]" : ",[],[]";
      types += t.empty() ? "\"Int\",\"Int\"" : ",\"Int\",\"Int\"";
    }
    bytes_ += std::fprintf(f_, "      \"%s\": {\"values\": [%s], \"shapes\": [%s], \"types\": [%s]},\n",
                           key, values.c_str(), shapes.c_str(), types.c_str());
  }

  FILE* f_;
  int64_t bytes_ = 0;
  bool first_ = true;
};

int64_t WriteTrace(const std::string& path, int64_t target_bytes) {
  FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr) {
    std::perror(path.c_str());
    std::exit(1);
  }
  static char buffer[1 << 20];
  std::setvbuf(f, buffer, _IOFBF, sizeof(buffer));
  Writer w(f);
  w.Raw("{\n  \"schema\": \"1.1.0-chakra.0.0.4\", \"pid\": 1, \"time\": \"2024-01-01 00:00:00\", "
        "\"start_ts\": 0,\n  \"nodes\": [");
  constexpr int kLayers = 24;
  constexpr int64_t kAct = 4096 * 16;   // activation elements (256 KiB)
  constexpr int64_t kWeight = 1024 * 16;
  int64_t id = 10, rf = 10;
  // Parameters: storages 1 .. 2*kLayers (weights, .grad buffers).
  w.Node(2, "[pytorch|profiler|execution_trace|thread]", 1, 0, 7, 1, 0, {}, {});
  w.Node(3, "[pytorch|profiler|execution_trace|thread]", 1, 0, 7, 2, 0, {}, {});
  int64_t next_storage = 1000;
  auto storage = [&]() {  // an allocator's recycled addresses
    next_storage = next_storage >= 1000 + 512 ? 1000 : next_storage + 1;
    return next_storage;
  };
  for (int64_t step = 0; w.bytes() < target_bytes; ++step) {
    const int64_t ps = id++;
    std::string ps_name = "ProfilerStep#" + std::to_string(step);
    std::vector<int64_t> acts(kLayers + 1);
    acts[0] = storage();
    const int64_t fwd = id++;
    for (int l = 0; l < kLayers; ++l) {
      const int64_t weight = 1 + l;
      const int64_t lin = id++;
      const int64_t t = id++, tr = id++, as = id++;
      w.Node(as, "aten::as_strided", tr, rf++, 0, 1, 0, {{weight, kWeight}}, {{weight, kWeight}});
      w.Node(tr, "aten::transpose", t, rf++, 0, 1, 0, {{weight, kWeight}}, {{weight, kWeight}});
      w.Node(t, "aten::t", lin, rf++, 0, 1, 0, {{weight, kWeight}}, {{weight, kWeight}});
      const int64_t mm = id++, ws = id++;
      const int64_t out = storage(), work = storage();
      w.Node(ws, "aten::empty", mm, rf++, 0, 1, 0, {}, {{work, 1024}});
      w.Node(mm, "aten::addmm", lin, rf++, 0, 1, 0, {{acts[l], kAct}, {weight, kWeight}},
             {{out, kAct}});
      w.Node(lin, "aten::linear", fwd, rf++, 0, 1, 0, {{acts[l], kAct}, {weight, kWeight}},
             {{out, kAct}});
      const int64_t relu = id++, cm = id++;
      acts[l + 1] = storage();
      w.Node(cm, "aten::clamp_min", relu, rf++, 0, 1, 0, {{out, kAct}}, {{acts[l + 1], kAct}});
      w.Node(relu, "aten::relu", fwd, rf++, 0, 1, 0, {{out, kAct}}, {{acts[l + 1], kAct}});
    }
    w.Node(fwd, "## forward ##", ps, rf++, 7, 1, 0, {}, {});
    const int64_t bwd = id++;
    w.Node(bwd, "## backward ##", ps, rf++, 7, 1, 0, {}, {});
    int64_t grad = storage();
    for (int l = kLayers - 1; l >= 0; --l) {
      const int64_t ev = id++, node = id++, mm1 = id++, mm2 = id++, th = id++;
      const int64_t g2 = storage(), gw = storage();
      w.Node(th, "aten::threshold_backward", node, rf++, 0, 2, 0,
             {{grad, kAct}, {acts[l + 1], kAct}}, {{g2, kAct}});
      w.Node(mm1, "aten::mm", node, rf++, 0, 2, 0, {{g2, kAct}, {1 + l, kWeight}}, {{grad, kAct}});
      w.Node(mm2, "aten::mm", node, rf++, 0, 2, 0, {{g2, kAct}, {acts[l], kAct}}, {{gw, kWeight}});
      w.Node(node, "AddmmBackward0", ev, rf++, 1, 2, 1, {{g2, kAct}}, {});
      w.Node(ev, "autograd::engine::evaluate_function: AddmmBackward0", 3, rf++, 0, 2, 0, {}, {});
      const int64_t acc_ev = id++, acc = id++, add = id++;
      w.Node(add, "aten::add_", acc, rf++, 0, 2, 0, {{100 + l, kWeight}, {gw, kWeight}},
             {{100 + l, kWeight}});
      w.Node(acc, "torch::autograd::AccumulateGrad", acc_ev, rf++, 1, 2, 1, {{gw, kWeight}}, {});
      w.Node(acc_ev, "autograd::engine::evaluate_function: torch::autograd::AccumulateGrad", 3,
             rf++, 0, 2, 0, {}, {});
    }
    const int64_t opt = id++;
    for (int l = 0; l < kLayers; ++l) {
      w.Node(id++, "aten::add_", opt, rf++, 0, 1, 0, {{1 + l, kWeight}, {100 + l, kWeight}},
             {{1 + l, kWeight}});
    }
    w.Node(opt, "Optimizer.step#SGD.step", ps, rf++, 7, 1, 0, {}, {});
    w.Node(ps, ps_name.c_str(), 2, rf++, 7, 1, 0, {}, {});
  }
  w.Raw("\n  ],\n  \"finish_ts\": 1\n}\n");
  std::fclose(f);
  return w.bytes();
}

}  // namespace

int main(int argc, char** argv) {
  const int64_t mb = argc > 1 ? std::atoll(argv[1]) : 1024;
  const std::string path = argc > 2 ? argv[2] : "/tmp/swapplan_import_bench.json";
  const int64_t bytes = WriteTrace(path, mb << 20);
  const auto t0 = std::chrono::steady_clock::now();
  absl::StatusOr<swapplan::Trace> t = swapplan::ReadAnyTrace(path);
  const double s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::remove(path.c_str());
  if (!t.ok()) {
    std::fprintf(stderr, "import failed: %s\n", std::string(t.status().message()).c_str());
    return 1;
  }
  struct rusage ru {};
  getrusage(RUSAGE_SELF, &ru);
  std::printf("ET JSON %.1f MB: %d iterations, %d ops, %d tensors\n", bytes / 1e6,
              t->num_iterations(), t->num_ops(), t->num_tensors());
  std::printf("import %.2f s = %.1f MB/s; trace model %.1f MB; peak RSS %.1f MB\n", s,
              bytes / 1e6 / s, t->ApproximateMemoryBytes() / 1e6, ru.ru_maxrss / 1024.0);
  return 0;
}
