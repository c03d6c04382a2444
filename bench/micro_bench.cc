// Micro-benchmarks of hot paths: serialization, record framing, heap state.
#include <benchmark/benchmark.h>

#include <atomic>

#include "network/buffer_pool.h"
#include "network/channel.h"
#include "network/partition_writer.h"
#include "runtime/operator_context.h"
#include "weir/functions.h"

namespace {

struct Rec {
  int64_t key = 0;
  std::string name;
  int64_t value = 0;
  auto weir_fields() { return std::tie(key, name, value); }
};

void BM_SerializeRecord(benchmark::State& state) {
  Rec r{42, "auction-1234", 7};
  std::string out;
  for (auto _ : state) {
    out.clear();
    weir::ByteWriter w(&out);
    weir::Serializer<Rec>::write(w, r);
    benchmark::DoNotOptimize(out.data());
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_SerializeRecord);

void BM_FrameAndReassemble(benchmark::State& state) {
  weir::network::NetworkBufferPool pool(16, 32 * 1024);
  std::atomic<bool> cancelled{false};
  auto ch = std::make_shared<weir::network::LocalChannel>(1 << 20);
  weir::network::ResultPartition out({ch}, &pool, &cancelled);
  weir::network::RecordDeserializer in;
  std::string rec(24, 'x');
  int64_t n = 0;
  for (auto _ : state) {
    out.emit(0, rec);
    if (pool.available() < 2) {
      out.flush_all();
      while (auto ev = ch->poll()) {
        in.feed(ev->buffer.data(), ev->buffer.size(), [&](std::string_view) {
          ++n;
          return true;
        });
      }
    }
  }
  benchmark::DoNotOptimize(n);
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_FrameAndReassemble);

void BM_HeapValueStateUpdate(benchmark::State& state) {
  const int64_t keys = state.range(0);
  weir::KeyGroupRange all{0, 128};
  weir::runtime::RuntimeOperatorContext op({0, 1, 128, 0, "op", all, false, nullptr, "", nullptr});
  weir::detail::KeyedBackend<int64_t> backend(all, nullptr);
  weir::KeyedRuntimeContext<int64_t> ctx(&op, &backend);
  auto& v = ctx.get_state(weir::ValueStateDescriptor<int64_t>{"v"});
  int64_t i = 0;
  for (auto _ : state) {
    int64_t key = i++ % keys;
    backend.set_current_key(&key, weir::key_group_of(key, 128));
    v.update(v.value_or(0) + 1);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_HeapValueStateUpdate)->Arg(1000)->Arg(1000000);

}  // namespace
