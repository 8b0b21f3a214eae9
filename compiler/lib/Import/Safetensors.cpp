//===- Safetensors.cpp - Reading and writing safetensors files ------------===//
//
// The format: 8 bytes little-endian header length N, N bytes of JSON
// mapping names to {dtype, shape, data_offsets: [begin, end)} (offsets
// relative to the end of the header), then the data.
//
//===----------------------------------------------------------------------===//
#include "dynb/Import/Safetensors.h"
#include "dynb/Import/DuplicateKeys.h"
#include "dynb/Import/NestingDepth.h"
#include "dynb/Runtime/ElementCount.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cstring>

using namespace dynb;
namespace json = llvm::json;

static constexpr uint64_t kMaxHeaderBytes = 100u << 20;

static llvm::Error fail(llvm::StringRef path, const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 path + ": " + msg);
}

llvm::Error dynb::loadSafetensors(llvm::StringRef path,
                                  rt::ParameterStore &store, uint64_t maxBytes,
                                  llvm::StringRef limitName) {
  auto buf = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                         /*RequiresNullTerminator=*/false);
  if (!buf)
    return fail(path, "cannot read: " + buf.getError().message());
  llvm::StringRef bytes = (*buf)->getBuffer();
  if (bytes.size() < 8)
    return fail(path, "too short for a safetensors header (" +
                          llvm::Twine(bytes.size()) + " bytes)");
  uint64_t headerLen = 0;
  for (int i = 7; i >= 0; --i)
    headerLen = (headerLen << 8) | static_cast<uint8_t>(bytes[i]);
  if (headerLen > kMaxHeaderBytes || headerLen > bytes.size() - 8)
    return fail(path, "header length " + llvm::Twine(headerLen) +
                          " exceeds the file (" + llvm::Twine(bytes.size()) +
                          " bytes) or 100 MiB");
  llvm::StringRef header = bytes.substr(8, headerLen);
  llvm::StringRef data = bytes.substr(8 + headerLen);
  if (findExcessiveNesting(header, kMaxNestingDepth, /*lineComments=*/false))
    return fail(path, "header nests deeper than " +
                          llvm::Twine(kMaxNestingDepth) + " levels");
  auto parsed = json::parse(header);
  if (!parsed)
    return fail(path, "header is not valid JSON: " +
                          llvm::toString(parsed.takeError()));
  const json::Object *top = parsed->getAsObject();
  if (!top)
    return fail(path, "header is not a JSON object");
  if (std::optional<DuplicateKey> dup = findDuplicateKey(header))
    return fail(path, dup->depth == 1
                          ? "header names tensor '" + dup->key + "' twice"
                          : "header names the key '" + dup->key +
                                "' twice in one object");

  struct Entry {
    std::string name;
    std::vector<int64_t> shape;
    uint64_t begin, end;
  };
  std::vector<Entry> entries;
  for (const auto &kv : *top) {
    std::string name = kv.first.str();
    if (name == "__metadata__")
      continue;
    auto where = [&](const llvm::Twine &msg) {
      return fail(path, "tensor '" + name + "': " + msg);
    };
    const json::Object *o = kv.second.getAsObject();
    if (!o)
      return where("entry is not an object");
    std::optional<llvm::StringRef> dtype = o->getString("dtype");
    if (!dtype)
      return where("no dtype");
    if (*dtype != "F32")
      return where("dtype " + *dtype + " is not supported (only F32)");
    const json::Array *shape = o->getArray("shape");
    const json::Array *offs = o->getArray("data_offsets");
    if (!shape || !offs || offs->size() != 2)
      return where("needs 'shape' and two 'data_offsets'");
    Entry e{name, {}, 0, 0};
    for (const json::Value &d : *shape) {
      std::optional<int64_t> n = d.getAsInteger();
      if (!n || *n < 0)
        return where("shape has a negative or non-integer dimension");
      e.shape.push_back(*n);
      if (!checkedElementCount(e.shape))
        return where("shape has more than 2^34 elements");
    }
    uint64_t elements = uint64_t(*checkedElementCount(e.shape));
    std::optional<int64_t> b = (*offs)[0].getAsInteger();
    std::optional<int64_t> en = (*offs)[1].getAsInteger();
    if (!b || !en || *b < 0 || *en < *b)
      return where("data_offsets are not an increasing pair");
    e.begin = *b;
    e.end = *en;
    if (e.end > data.size())
      return where("data_offsets [" + llvm::Twine(e.begin) + ", " +
                   llvm::Twine(e.end) + ") run past the data (" +
                   llvm::Twine(data.size()) + " bytes)");
    if (e.end - e.begin != elements * 4)
      return where("holds " + llvm::Twine(e.end - e.begin) +
                   " bytes but its shape needs " + llvm::Twine(elements * 4));
    entries.push_back(std::move(e));
  }
  uint64_t total = 0;
  for (const Entry &e : entries)
    total += e.end - e.begin;
  if (maxBytes && total > maxBytes)
    return fail(path, "its tensors hold " + llvm::Twine(total) +
                          " bytes, more than " + limitName + " of " +
                          llvm::Twine(maxBytes) + " bytes");
  std::sort(entries.begin(), entries.end(),
            [](const Entry &a, const Entry &b) { return a.begin < b.begin; });
  // An empty tensor (begin == end) holds no bytes, so it overlaps nothing,
  // even where it starts inside another tensor. Among the others, sorted by
  // where they begin, an overlap shows between neighbours.
  const Entry *previous = nullptr;
  for (const Entry &e : entries) {
    if (e.begin == e.end)
      continue;
    if (previous && e.begin < previous->end)
      return fail(path, "tensors '" + previous->name + "' and '" + e.name +
                            "' overlap");
    previous = &e;
  }
  for (Entry &e : entries) {
    std::vector<float> values((e.end - e.begin) / 4);
    // An empty tensor has no data to copy (and memcpy from its null data
    // pointer would be undefined).
    if (!values.empty())
      std::memcpy(values.data(), data.data() + e.begin, e.end - e.begin);
    rt::Status s = store.add(e.name, e.shape, std::move(values));
    if (!s.isOk())
      return fail(path, "tensor '" + e.name + "': " + s.message());
  }
  return llvm::Error::success();
}

llvm::Error dynb::writeSafetensors(llvm::StringRef path,
                                   llvm::ArrayRef<NamedTensor> tensors) {
  std::string header;
  {
    llvm::raw_string_ostream os(header);
    json::OStream j(os);
    uint64_t offset = 0;
    j.object([&] {
      for (const NamedTensor &t : tensors) {
        j.attributeObject(t.name, [&] {
          j.attribute("dtype", "F32");
          j.attributeArray("shape", [&] {
            for (int64_t d : t.shape)
              j.value(d);
          });
          uint64_t bytes = t.data->size() * 4;
          j.attributeArray("data_offsets", [&] {
            j.value(int64_t(offset));
            j.value(int64_t(offset + bytes));
          });
          offset += bytes;
        });
      }
    });
  }
  while (header.size() % 8 != 0)
    header.push_back(' ');
  llvm::SmallString<256> tmp(path);
  tmp += ".tmp";
  {
    std::error_code ec;
    llvm::raw_fd_ostream os(tmp, ec, llvm::sys::fs::OF_None);
    if (ec)
      return fail(path, "cannot write: " + ec.message());
    uint64_t len = header.size();
    for (int i = 0; i < 8; ++i)
      os << static_cast<char>((len >> (8 * i)) & 0xff);
    os << header;
    for (const NamedTensor &t : tensors)
      os.write(reinterpret_cast<const char *>(t.data->data()),
               t.data->size() * 4);
    os.close();
    if (os.has_error()) {
      std::string msg = os.error().message();
      os.clear_error();
      llvm::sys::fs::remove(tmp);
      return fail(path, "write failed: " + msg);
    }
  }
  if (std::error_code ec = llvm::sys::fs::rename(tmp, path)) {
    llvm::sys::fs::remove(tmp);
    return fail(path, "cannot rename into place: " + ec.message());
  }
  return llvm::Error::success();
}
