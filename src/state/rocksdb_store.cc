#include "state/rocksdb_store.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <random>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "rocksdb/cache.h"
#include "rocksdb/compaction_filter.h"
#include "rocksdb/utilities/checkpoint.h"
#include "rocksdb/db.h"
#include "rocksdb/filter_policy.h"
#include "rocksdb/options.h"
#include "rocksdb/sst_file_writer.h"
#include "rocksdb/table.h"
#include "rocksdb/write_batch.h"
#include "rocksdb/write_buffer_manager.h"

namespace weir::state {
namespace {

namespace fs = std::filesystem;

// Drops values whose leading 8-byte stamp (TtlValue) is older than the
// column family's TTL, by the wall clock (processing time).
class TtlFilter final : public rocksdb::CompactionFilter {
 public:
  explicit TtlFilter(int64_t ttl_ms) : ttl_ms_(ttl_ms) {}
  bool Filter(int, const rocksdb::Slice&, const rocksdb::Slice& value, std::string*, bool*) const override {
    if (value.size() < sizeof(int64_t)) return false;
    int64_t stamp;
    std::memcpy(&stamp, value.data(), sizeof(stamp));
    int64_t now = std::chrono::duration_cast<std::chrono::milliseconds>(
                      std::chrono::system_clock::now().time_since_epoch())
                      .count();
    return now - stamp >= ttl_ms_;
  }
  const char* Name() const override { return "weir.TtlFilter"; }

 private:
  const int64_t ttl_ms_;
};

// Gives each compaction of a TTL column family a TtlFilter. The TTL of a
// column family is known only once its state registers (also after a
// restore), so the factory is on every column family and keeps a map.
class TtlFilterFactory final : public rocksdb::CompactionFilterFactory {
 public:
  void set(uint32_t cf_id, int64_t ttl_ms) {
    std::lock_guard lock(mu_);
    ttl_[cf_id] = ttl_ms;
  }
  std::unique_ptr<rocksdb::CompactionFilter> CreateCompactionFilter(
      const rocksdb::CompactionFilter::Context& ctx) override {
    std::lock_guard lock(mu_);
    auto it = ttl_.find(ctx.column_family_id);
    if (it == ttl_.end()) return nullptr;
    return std::make_unique<TtlFilter>(it->second);
  }
  const char* Name() const override { return "weir.TtlFilterFactory"; }

 private:
  std::mutex mu_;
  std::map<uint32_t, int64_t> ttl_;
};

// The block cache and memtable budget all instances of the process share.
struct SharedMemory {
  std::shared_ptr<rocksdb::Cache> cache;
  std::shared_ptr<rocksdb::WriteBufferManager> write_buffers;
};

std::shared_ptr<SharedMemory> shared_memory(int64_t bytes) {
  static std::mutex mu;
  static std::map<int64_t, std::weak_ptr<SharedMemory>> by_budget;
  std::lock_guard<std::mutex> lock(mu);
  std::weak_ptr<SharedMemory>& slot = by_budget[bytes];
  if (auto live = slot.lock()) return live;
  auto m = std::make_shared<SharedMemory>();
  m->cache = rocksdb::NewLRUCache(static_cast<size_t>(bytes));
  // Memtables may take half of the budget; their memory is reserved in the
  // cache, so blocks and memtables together stay within `bytes`.
  m->write_buffers = std::make_shared<rocksdb::WriteBufferManager>(static_cast<size_t>(bytes / 2), m->cache);
  slot = m;
  return m;
}

std::string successor(std::string_view prefix) {
  std::string s(prefix);
  while (!s.empty()) {
    auto& c = reinterpret_cast<unsigned char&>(s.back());
    if (c != 0xff) {
      ++c;
      return s;
    }
    s.pop_back();
  }
  return s;  // empty: no upper bound
}

class RocksStore final : public detail::KvStore, public std::enable_shared_from_this<RocksStore> {
 public:
  RocksStore(fs::path dir, std::shared_ptr<SharedMemory> memory) : dir_(std::move(dir)), memory_(std::move(memory)) {
    write_.disableWAL = true;
    rocksdb::BlockBasedTableOptions table;
    table.block_cache = memory_->cache;
    table.cache_index_and_filter_blocks = true;
    table.pin_l0_filter_and_index_blocks_in_cache = true;
    table.filter_policy.reset(rocksdb::NewBloomFilterPolicy(10));
    cf_options_.table_factory.reset(rocksdb::NewBlockBasedTableFactory(table));
    cf_options_.write_buffer_size = 16 << 20;
    cf_options_.compaction_filter_factory = ttl_filters_;
    cf_options_.max_write_buffer_number = 2;
    // Universal compaction merges runs of similar size, so updates spread
    // over the whole key space do not rewrite a large level at every
    // compaction; merging only from 8 runs on rewrites each byte less often.
    // An incremental checkpoint then uploads a few times the changed bytes
    // instead of tens of times (docs/benchmarks.md, large state). Point
    // reads check the runs' bloom filters.
    cf_options_.compaction_style = rocksdb::kCompactionStyleUniversal;
    cf_options_.level0_file_num_compaction_trigger = 8;
  }

  ~RocksStore() override {
    if (db_ != nullptr) {
      for (rocksdb::ColumnFamilyHandle* h : handles_) db_->DestroyColumnFamilyHandle(h);
      db_->Close();
      delete db_;
    }
    std::error_code ec;
    fs::remove_all(dir_, ec);
    fs::remove(dir_.parent_path(), ec);  // the job's directory, once its last store is gone
  }

  // A fresh instance, or (with `files`) one on copies of a native snapshot.
  // With `files`, opens on them: copies, or with `link` hard links of the
  // SST files (immutable; RocksDB only ever unlinks them) and copies of the
  // rest (manifest, options), which an open rewrites.
  absl::Status open(const std::vector<std::string>* files = nullptr, bool link = false) {
    std::error_code ec;
    fs::remove_all(dir_, ec);
    fs::create_directories(dir_, ec);
    if (ec) return absl::InternalError("cannot create RocksDB directory " + dir_.string() + ": " + ec.message());
    instance_ = random_hex();
    rocksdb::DBOptions db;
    db.create_if_missing = true;
    db.write_buffer_manager = memory_->write_buffers;
    db.max_background_jobs = 2;
    db.info_log_level = rocksdb::InfoLogLevel::WARN_LEVEL;
    db.keep_log_file_num = 1;
    db.avoid_flush_during_shutdown = true;
    std::vector<rocksdb::ColumnFamilyDescriptor> cfs{{rocksdb::kDefaultColumnFamilyName, cf_options_}};
    if (files != nullptr) {
      for (const std::string& f : *files) {
        // Uploaded as <owner>~<RocksDB's file name>.
        std::string name = fs::path(f).filename().string();
        size_t cut = name.find('~');
        fs::path to = dir_ / (cut == std::string::npos ? name : name.substr(cut + 1));
        if (link && is_immutable_file(name)) {
          fs::create_hard_link(f, to, ec);
          if (!ec) continue;
          ec.clear();
        }
        fs::copy_file(f, to, ec);
        if (ec) return absl::DataLossError("cannot copy snapshot file " + f + ": " + ec.message());
      }
      std::vector<std::string> names;
      rocksdb::Status ls = rocksdb::DB::ListColumnFamilies(db, dir_.string(), &names);
      if (!ls.ok()) return absl::DataLossError("native snapshot in " + dir_.string() + ": " + ls.ToString());
      for (const auto& n : names) {
        if (n != rocksdb::kDefaultColumnFamilyName) cfs.emplace_back(n, cf_options_);
      }
    }
    rocksdb::Status s = rocksdb::DB::Open(db, dir_.string(), cfs, &handles_, &db_);
    if (!s.ok()) return absl::InternalError("cannot open RocksDB state in " + dir_.string() + ": " + s.ToString());
    for (size_t i = 1; i < cfs.size(); ++i) by_name_.emplace(cfs[i].name, static_cast<int>(i));
    return absl::OkStatus();
  }

  absl::StatusOr<std::unique_ptr<detail::NativeSnapshot>> native_snapshot(
      std::vector<detail::StateMeta> states) override {
    fs::path target = dir_.string() + ".chk-" + std::to_string(++snapshots_);
    std::error_code ec;
    fs::remove_all(target, ec);
    rocksdb::Checkpoint* raw = nullptr;
    rocksdb::Status s = rocksdb::Checkpoint::Create(db_, &raw);
    std::unique_ptr<rocksdb::Checkpoint> cp(raw);
    // With the write-ahead log off, 0 makes it flush the memtables first.
    if (s.ok()) s = cp->CreateCheckpoint(target.string(), /*log_size_for_flush=*/0);
    if (!s.ok()) {
      return absl::InternalError("RocksDB state in " + dir_.string() + ": cannot take a native snapshot: " +
                                 s.ToString());
    }
    return std::unique_ptr<detail::NativeSnapshot>(new Native(shared_from_this(), target, std::move(states)));
  }

  void compact() override {
    for (rocksdb::ColumnFamilyHandle* h : handles_) {
      check(db_->CompactRange(rocksdb::CompactRangeOptions(), h, nullptr, nullptr), "compact");
    }
  }

  void checkpoint_complete(int64_t id) override {
    std::lock_guard lock(uploads_mu_);
    auto it = uploads_.find(id);
    // A checkpoint without this store's files (a savepoint) leaves nothing
    // safe to refer to: the next native snapshot uploads everything.
    // Files confirmed here are reused until the next confirmation. They
    // stay alive meanwhile: savepoints do not subsume checkpoints, and a
    // newer checkpoint refers to every file still live in the store, adding
    // its references before the older checkpoint is released. (With one
    // retained checkpoint, a task two notifications behind could still
    // reuse a file only an already released checkpoint held.)
    confirmed_ = it == uploads_.end() ? std::map<std::string, detail::UploadedFile>() : std::move(it->second);
    uploads_.erase(uploads_.begin(), uploads_.upper_bound(id));
  }

  int column(const std::string& name, int64_t ttl_ms) override {
    auto it = by_name_.find(name);
    int id;
    if (it != by_name_.end()) {
      id = it->second;
    } else {
      rocksdb::ColumnFamilyHandle* h = nullptr;
      check(db_->CreateColumnFamily(cf_options_, name, &h), "create the column family of state '" + name + "'");
      handles_.push_back(h);
      id = static_cast<int>(handles_.size()) - 1;
      by_name_.emplace(name, id);
    }
    if (ttl_ms > 0) ttl_filters_->set(handles_[id]->GetID(), ttl_ms);
    return id;
  }

  bool get(int cf, std::string_view key, std::string* value) override {
    rocksdb::Status s = db_->Get(rocksdb::ReadOptions(), handles_[cf], rocksdb::Slice(key.data(), key.size()), value);
    if (s.IsNotFound()) return false;
    check(s, "read");
    return true;
  }
  void put(int cf, std::string_view key, std::string_view value) override {
    check(db_->Put(write_, handles_[cf], rocksdb::Slice(key.data(), key.size()),
                   rocksdb::Slice(value.data(), value.size())),
          "write");
  }
  void put_all(int cf, const std::vector<std::pair<std::string_view, std::string_view>>& entries) override {
    rocksdb::WriteBatch batch;
    for (const auto& [k, v] : entries) {
      check(batch.Put(handles_[cf], rocksdb::Slice(k.data(), k.size()), rocksdb::Slice(v.data(), v.size())), "write");
    }
    check(db_->Write(write_, &batch), "write");
  }
  void bulk_begin(int cf) override {
    Bulk& b = bulk_[cf];
    b.file = (dir_ / ("ingest-" + std::to_string(++ingested_) + ".sst")).string();
    b.writer = std::make_unique<rocksdb::SstFileWriter>(
        rocksdb::EnvOptions(), rocksdb::Options(rocksdb::DBOptions(), cf_options_), handles_[cf]);
    b.entries = 0;
  }
  void bulk_end(int cf) override {
    auto it = bulk_.find(cf);
    if (it == bulk_.end()) return;
    Bulk b = std::move(it->second);
    bulk_.erase(it);
    if (b.entries == 0) return;
    check(b.writer->Finish(), "write");
    rocksdb::IngestExternalFileOptions opts;
    opts.move_files = true;
    check(db_->IngestExternalFile(handles_[cf], {b.file}, opts), "ingest");
  }
  void bulk_put(int cf, const std::vector<std::pair<std::string, std::string_view>>& entries) override {
    auto it = bulk_.find(cf);
    if (it == bulk_.end()) throw std::logic_error("bulk_put without bulk_begin");
    Bulk& b = it->second;
    if (b.entries == 0 && !entries.empty()) check(b.writer->Open(b.file), "write");
    for (const auto& [k, v] : entries) check(b.writer->Put(k, rocksdb::Slice(v.data(), v.size())), "write");
    b.entries += entries.size();
  }
  void erase(int cf, std::string_view key) override {
    check(db_->Delete(write_, handles_[cf], rocksdb::Slice(key.data(), key.size())), "delete");
  }
  void erase_prefix(int cf, std::string_view prefix) override {
    {  // Nothing to erase (a fresh restore): no range tombstone.
      std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions(), handles_[cf]));
      it->Seek(rocksdb::Slice(prefix.data(), prefix.size()));
      check(it->status(), "read");
      if (!it->Valid() || !it->key().starts_with(rocksdb::Slice(prefix.data(), prefix.size()))) return;
    }
    std::string end = successor(prefix);
    if (end.empty()) {
      std::vector<std::string> keys;
      scan(cf, prefix, [&](std::string_view k, std::string_view) { keys.emplace_back(k); });
      for (const auto& k : keys) erase(cf, k);
      return;
    }
    check(db_->DeleteRange(write_, handles_[cf], rocksdb::Slice(prefix.data(), prefix.size()), end), "delete a range");
  }
  void scan(int cf, std::string_view prefix, const detail::KvVisitor& fn) override {
    scan_at(nullptr, cf, prefix, fn);
  }

  std::shared_ptr<const detail::KvView> pin() override {
    return std::make_shared<View>(shared_from_this(), db_->GetSnapshot());
  }

 private:
  class View final : public detail::KvView {
   public:
    View(std::shared_ptr<RocksStore> store, const rocksdb::Snapshot* snap) : store_(std::move(store)), snap_(snap) {}
    ~View() override { store_->db_->ReleaseSnapshot(snap_); }
    void scan(int cf, std::string_view prefix, const detail::KvVisitor& fn) const override {
      store_->scan_at(snap_, cf, prefix, fn);
    }

   private:
    const std::shared_ptr<RocksStore> store_;
    const rocksdb::Snapshot* const snap_;
  };

  class Native final : public detail::NativeSnapshot {
   public:
    Native(std::shared_ptr<RocksStore> store, fs::path dir, std::vector<detail::StateMeta> states)
        : store_(std::move(store)), dir_(std::move(dir)), states_(std::move(states)) {}
    ~Native() override {
      std::error_code ec;
      fs::remove_all(dir_, ec);
      fs::remove(dir_.parent_path(), ec);  // the job's directory, once empty
    }
    std::vector<std::string> files() const override {
      std::vector<std::string> out;
      std::error_code ec;
      for (const auto& e : fs::directory_iterator(dir_, ec)) out.push_back(e.path().string());
      std::sort(out.begin(), out.end());
      return out;
    }
    std::optional<detail::UploadedFile> confirmed_upload(const std::string& file) const override {
      std::lock_guard lock(store_->uploads_mu_);
      auto it = store_->confirmed_.find(file);
      if (it == store_->confirmed_.end()) return std::nullopt;
      return it->second;
    }
    void record_upload(int64_t id, const std::string& file, detail::UploadedFile upload) override {
      std::lock_guard lock(store_->uploads_mu_);
      store_->uploads_[id][file] = std::move(upload);
    }
    std::vector<detail::StateMeta> states() const override { return states_; }
    bool keep_local_copy(const std::string& target) override {
      std::error_code ec;
      fs::create_directories(fs::path(target).parent_path(), ec);
      fs::remove_all(target, ec);
      fs::rename(dir_, target, ec);
      return !ec;
    }

   private:
    const std::shared_ptr<RocksStore> store_;
    const fs::path dir_;
    const std::vector<detail::StateMeta> states_;
  };

  static std::string random_hex() {
    std::random_device rd;
    char buf[17];
    std::snprintf(buf, sizeof(buf), "%08x%08x", rd(), rd());
    return buf;
  }

  void scan_at(const rocksdb::Snapshot* snap, int cf, std::string_view prefix, const detail::KvVisitor& fn) {
    rocksdb::ReadOptions ro;
    ro.snapshot = snap;
    ro.fill_cache = false;  // scans (snapshots, restores) must not evict the working set
    std::string end = successor(prefix);
    rocksdb::Slice upper(end);
    if (!end.empty()) ro.iterate_upper_bound = &upper;
    std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(ro, handles_[cf]));
    for (it->Seek(rocksdb::Slice(prefix.data(), prefix.size())); it->Valid(); it->Next()) {
      rocksdb::Slice k = it->key(), v = it->value();
      fn(std::string_view(k.data(), k.size()), std::string_view(v.data(), v.size()));
    }
    check(it->status(), "scan");
  }

  void check(const rocksdb::Status& s, const std::string& what) const {
    if (!s.ok()) {
      throw std::runtime_error("RocksDB state in " + dir_.string() + ": cannot " + what + ": " + s.ToString());
    }
  }

  const fs::path dir_;
  const std::shared_ptr<SharedMemory> memory_;
  rocksdb::ColumnFamilyOptions cf_options_;
  rocksdb::WriteOptions write_;
  rocksdb::DB* db_ = nullptr;
  std::vector<rocksdb::ColumnFamilyHandle*> handles_;  // [0] is the default column family
  std::map<std::string, int> by_name_;
  std::string instance_;
  int64_t snapshots_ = 0;
  int64_t ingested_ = 0;
  // Bulk loads in progress, by column family.
  struct Bulk {
    std::string file;
    std::unique_ptr<rocksdb::SstFileWriter> writer;
    size_t entries = 0;
  };
  std::map<int, Bulk> bulk_;
  const std::shared_ptr<TtlFilterFactory> ttl_filters_ = std::make_shared<TtlFilterFactory>();
  // SST uploads: per checkpoint, and those of the last confirmed one.
  std::mutex uploads_mu_;
  std::map<int64_t, std::map<std::string, detail::UploadedFile>> uploads_;
  std::map<std::string, detail::UploadedFile> confirmed_;
};

}  // namespace

absl::StatusOr<std::shared_ptr<detail::KvStore>> open_rocksdb_store(const fs::path& dir, int64_t memory_bytes) {
  auto store = std::make_shared<RocksStore>(dir, shared_memory(memory_bytes));
  absl::Status s = store->open();
  if (!s.ok()) return s;
  return std::shared_ptr<detail::KvStore>(std::move(store));
}

absl::StatusOr<std::shared_ptr<detail::KvStore>> open_rocksdb_store_from(const fs::path& dir, int64_t memory_bytes,
                                                                         const std::vector<std::string>& files,
                                                                         bool link) {
  auto store = std::make_shared<RocksStore>(dir, shared_memory(memory_bytes));
  absl::Status s = store->open(&files, link);
  if (!s.ok()) return s;
  return std::shared_ptr<detail::KvStore>(std::move(store));
}

fs::path state_root(const std::string& configured, const std::string& job_id) {
  fs::path root = configured.empty() ? fs::temp_directory_path() / "weir-rocksdb" : fs::path(configured);
  return root / (job_id.empty() ? "job" : job_id);
}

}  // namespace weir::state
