//===- KernelObjectStoreTest.cpp - The persistent kernel cache ------------===//
//
// Entries round-trip; damaged, truncated and foreign entries are refused
// with a warning; concurrent writers leave whole entries; and a KernelCache
// over a store compiles a module once across caches (as across processes),
// with code that computes what the compiled code computes.
//
//===----------------------------------------------------------------------===//
#include "dynb/JIT/KernelObjectStore.h"
#include "dynb/Dialect/DynbDialect.h"
#include "dynb/JIT/KernelCache.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include <gtest/gtest.h>

#include <atomic>
#include <fstream>
#include <thread>
#include <vector>

using namespace dynb;

namespace {

class TempDir {
public:
  TempDir() {
    llvm::SmallString<128> dir;
    EXPECT_FALSE(llvm::sys::fs::createUniqueDirectory("dynb-kc", dir));
    path = std::string(dir);
  }
  ~TempDir() { llvm::sys::fs::remove_directories(path); }
  std::string path;
};

std::string readFile(const std::string &path) {
  auto buf = llvm::MemoryBuffer::getFile(path, /*IsText=*/false);
  return buf ? (*buf)->getBuffer().str() : std::string();
}

void writeFile(const std::string &path, const std::string &bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

TEST(KernelObjectStore, RoundTripsAnEntry) {
  TempDir dir;
  KernelObjectStore store(dir.path + "/kernels");
  std::string warnings;
  llvm::raw_string_ostream os(warnings);
  EXPECT_EQ(store.load("key", os), nullptr); // nothing stored yet
  store.store("key", "object bytes", os);
  auto loaded = store.load("key", os);
  ASSERT_NE(loaded, nullptr);
  EXPECT_EQ(loaded->getBuffer(), "object bytes");
  EXPECT_EQ(store.load("other key", os), nullptr);
  EXPECT_TRUE(warnings.empty()) << warnings;
}

TEST(KernelObjectStore, RefusesDamagedEntries) {
  TempDir dir;
  KernelObjectStore store(dir.path);
  std::string warnings;
  llvm::raw_string_ostream os(warnings);
  store.store("key", "object bytes", os);
  std::string path = store.entryPath("key");
  std::string whole = readFile(path);
  ASSERT_FALSE(whole.empty());

  writeFile(path, whole.substr(0, whole.size() - 3));
  EXPECT_EQ(store.load("key", os), nullptr);
  EXPECT_NE(warnings.find("is truncated"), std::string::npos) << warnings;

  std::string flipped = whole;
  flipped.back() ^= 1;
  writeFile(path, flipped);
  warnings.clear();
  EXPECT_EQ(store.load("key", os), nullptr);
  EXPECT_NE(warnings.find("fails its checksum"), std::string::npos) << warnings;

  writeFile(path, "not an entry at all");
  warnings.clear();
  EXPECT_EQ(store.load("key", os), nullptr);
  EXPECT_NE(warnings.find("is not a dynb kernel cache entry"),
            std::string::npos)
      << warnings;

  // Another key's entry under this key's name.
  store.store("other", "other bytes", os);
  writeFile(path, readFile(store.entryPath("other")));
  warnings.clear();
  EXPECT_EQ(store.load("key", os), nullptr);
  EXPECT_NE(warnings.find("belongs to another module"), std::string::npos)
      << warnings;
  EXPECT_NE(warnings.find(path), std::string::npos) << warnings;

  // Storing again replaces the bad entry.
  store.store("key", "object bytes", os);
  auto loaded = store.load("key", os);
  ASSERT_NE(loaded, nullptr);
  EXPECT_EQ(loaded->getBuffer(), "object bytes");
}

TEST(KernelObjectStore, ConcurrentWritersLeaveWholeEntries) {
  TempDir dir;
  KernelObjectStore store(dir.path);
  // Writers replace one entry with objects of different sizes while readers
  // load it: every load sees one whole object or none, never a mix.
  std::vector<std::string> objects;
  for (int i = 0; i < 4; ++i)
    objects.push_back(std::string(1000 + 7919 * i, char('a' + i)));
  std::atomic<int> bad{0}, seen{0};
  std::vector<std::thread> threads;
  for (int w = 0; w < 4; ++w)
    threads.emplace_back([&, w] {
      std::string ignored;
      llvm::raw_string_ostream os(ignored);
      for (int i = 0; i < 50; ++i)
        store.store("shared", objects[(w + i) % objects.size()], os);
    });
  for (int r = 0; r < 2; ++r)
    threads.emplace_back([&] {
      std::string warnings;
      llvm::raw_string_ostream os(warnings);
      for (int i = 0; i < 200; ++i) {
        auto loaded = store.load("shared", os);
        if (!loaded)
          continue;
        ++seen;
        if (llvm::find(objects, loaded->getBuffer().str()) == objects.end())
          ++bad;
      }
      if (!warnings.empty())
        ++bad;
    });
  for (std::thread &t : threads)
    t.join();
  EXPECT_EQ(bad.load(), 0);
  std::string warnings;
  llvm::raw_string_ostream os(warnings);
  ASSERT_NE(store.load("shared", os), nullptr);
  // No temporary file is left behind.
  std::error_code ec;
  int files = 0;
  for (llvm::sys::fs::directory_iterator it(dir.path, ec), end;
       it != end && !ec; it.increment(ec))
    ++files;
  EXPECT_EQ(files, 1);
}

TEST(KernelObjectStore, OptionsPickTheDirectory) {
  KernelCacheOptions off;
  off.persistent = false;
  EXPECT_EQ(KernelObjectStore::open(off), nullptr);
  KernelCacheOptions explicitDir;
  explicitDir.directory = "some/dir";
  auto store = KernelObjectStore::open(explicitDir);
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(store->directory(), "some/dir");
}

// A module whose kernels are a fused tanh and a product (elementwise, so
// one row is enough to compare the compiled and the loaded code).
constexpr const char *kModule = R"mlir(
func.func @cell(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %t = dynb.tanh %a : tensor<4xf32>
  %m = dynb.mul %t, %b : tensor<4xf32>
  return %m : tensor<4xf32>
}
)mlir";

/// Runs the module's single kernel step on one row.
std::vector<float> runOnce(const LoweredModule &m) {
  EXPECT_EQ(m.kernelFns.size(), 1u);
  std::vector<float> a = {-2.0f, -0.5f, 0.25f, 3.0f};
  std::vector<float> b = {1.0f, 2.0f, -3.0f, 0.5f};
  std::vector<float> out(4, 0.0f);
  rt::MemRefDesc2D descs[3];
  float *data[3] = {a.data(), b.data(), out.data()};
  void *ptrs[3];
  void *args[3];
  for (int i = 0; i < 3; ++i) {
    descs[i] = {data[i], data[i], 0, {1, 4}, {4, 1}};
    ptrs[i] = &descs[i];
    args[i] = &ptrs[i];
  }
  m.kernelFns[0](args);
  return out;
}

/// kModule's @cell, and cache options over a directory of the test's own.
class CachedModule : public ::testing::Test {
protected:
  void SetUp() override {
    ctx.loadDialect<DynbDialect, mlir::func::FuncDialect>();
    module = mlir::parseSourceString<mlir::ModuleOp>(kModule, &ctx);
    ASSERT_TRUE(module);
    fn = module->lookupSymbol<mlir::func::FuncOp>("cell");
    options.directory = dir.path;
  }
  TempDir dir;
  mlir::MLIRContext ctx;
  mlir::OwningOpRef<mlir::ModuleOp> module;
  mlir::func::FuncOp fn;
  KernelCacheOptions options;
};

TEST_F(CachedModule, ASecondCacheLoadsWhatTheFirstCompiled) {

  KernelCache first;
  first.setObjectStore(KernelObjectStore::open(options));
  auto compiled = first.getModule(fn);
  ASSERT_TRUE(mlir::succeeded(compiled));
  EXPECT_EQ(first.stats().compiled, 1u);
  EXPECT_EQ(first.stats().loaded, 0u);

  KernelCache second;
  second.setObjectStore(KernelObjectStore::open(options));
  auto loaded = second.getModule(fn);
  ASSERT_TRUE(mlir::succeeded(loaded));
  EXPECT_EQ(second.stats().compiled, 0u);
  EXPECT_EQ(second.stats().loaded, 1u);
  EXPECT_NE((*loaded)->loadedCode, nullptr);
  EXPECT_EQ(runOnce(**compiled), runOnce(**loaded)); // bit for bit

  KernelCache uncached;
  auto again = uncached.getModule(fn);
  ASSERT_TRUE(mlir::succeeded(again));
  EXPECT_EQ(uncached.stats().compiled, 1u);
}

TEST_F(CachedModule, ADamagedEntryIsCompiledAgainAndReplaced) {
  {
    KernelCache first;
    first.setObjectStore(KernelObjectStore::open(options));
    ASSERT_TRUE(mlir::succeeded(first.getModule(fn)));
  }
  // Truncate the one entry.
  std::error_code ec;
  llvm::sys::fs::directory_iterator it(dir.path, ec);
  ASSERT_FALSE(ec);
  std::string entry = it->path();
  std::string whole = readFile(entry);
  writeFile(entry, whole.substr(0, whole.size() / 2));

  KernelCache second;
  second.setObjectStore(KernelObjectStore::open(options));
  testing::internal::CaptureStderr();
  auto rebuilt = second.getModule(fn);
  std::string warnings = testing::internal::GetCapturedStderr();
  ASSERT_TRUE(mlir::succeeded(rebuilt));
  EXPECT_EQ(second.stats().compiled, 1u);
  EXPECT_NE(warnings.find("is truncated"), std::string::npos) << warnings;
  EXPECT_EQ(readFile(entry), whole); // rewritten whole
}

} // namespace
