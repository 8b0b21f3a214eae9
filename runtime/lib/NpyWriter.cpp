//===- NpyWriter.cpp - Writes .npy files atomically -----------------------===//
#include "dynb/Runtime/NpyWriter.h"

#include <fmt/format.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <unistd.h>

using namespace dynb::rt;

// The data is written straight from memory as '<f4'.
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "writeNpyAtomic assumes a little-endian host");

namespace {

constexpr size_t kNpyHeaderAlignment = 64;
constexpr size_t kNpyPreambleBytes = 10; // magic, version, header length

/// The complete format 1.0 header: preamble, dict, space padding and '\n',
/// sized so the data starts at a multiple of 64 bytes.
std::string npyHeader(const std::vector<int64_t> &shape) {
  std::string shapeText = "(";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i > 0)
      shapeText += ", ";
    shapeText += std::to_string(shape[i]);
  }
  if (shape.size() == 1)
    shapeText += ",";
  shapeText += ")";
  std::string dict = fmt::format(
      "{{'descr': '<f4', 'fortran_order': False, 'shape': {}, }}", shapeText);
  size_t unpadded = kNpyPreambleBytes + dict.size() + 1;
  size_t padded = (unpadded + kNpyHeaderAlignment - 1) / kNpyHeaderAlignment *
                  kNpyHeaderAlignment;
  dict.append(padded - unpadded, ' ');
  dict.push_back('\n');

  std::string header("\x93NUMPY\x01\x00", 8);
  uint16_t dictLength = static_cast<uint16_t>(dict.size());
  header.push_back(static_cast<char>(dictLength & 0xff));
  header.push_back(static_cast<char>(dictLength >> 8));
  return header + dict;
}

/// Writes all of [data, data + size), retrying short writes and EINTR.
bool writeAll(int fd, const void *data, size_t size) {
  const char *cursor = static_cast<const char *>(data);
  while (size > 0) {
    ssize_t written = ::write(fd, cursor, size);
    if (written < 0) {
      if (errno == EINTR)
        continue;
      return false;
    }
    cursor += written;
    size -= static_cast<size_t>(written);
  }
  return true;
}

Status writeNpyAtomicImpl(const std::string &path,
                          const std::vector<int64_t> &shape,
                          const std::vector<float> &data) {
  int64_t numElements = 1;
  for (int64_t dim : shape) {
    if (dim < 0)
      return Status::error(
          fmt::format("{}: negative dimension {} in shape", path, dim));
    numElements *= dim;
  }
  if (numElements != static_cast<int64_t>(data.size()))
    return Status::error(
        fmt::format("{}: shape has {} elements but {} values were given", path,
                    numElements, data.size()));
  std::string header = npyHeader(shape);
  // The dict length field is 16 bits in format 1.0.
  if (header.size() - kNpyPreambleBytes > 0xffff)
    return Status::error(fmt::format("{}: shape too long for .npy 1.0", path));

  std::string tempPath = fmt::format("{}.tmp.{}", path, ::getpid());
  int fd =
      ::open(tempPath.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
  if (fd < 0)
    return Status::error(
        fmt::format("cannot write {}: {}", path, std::strerror(errno)));
  auto fail = [&](const char *what) {
    int savedErrno = errno;
    if (fd >= 0)
      ::close(fd);
    ::unlink(tempPath.c_str());
    return Status::error(fmt::format("cannot write {}: {}: {}", path, what,
                                     std::strerror(savedErrno)));
  };
  if (!writeAll(fd, header.data(), header.size()) ||
      !writeAll(fd, data.data(), data.size() * sizeof(float)))
    return fail("write");
  int closeResult = ::close(fd);
  fd = -1;
  if (closeResult != 0)
    return fail("close");
  if (::rename(tempPath.c_str(), path.c_str()) != 0)
    return fail("rename");
  return Status::ok();
}

} // namespace

Status dynb::rt::writeNpyAtomic(const std::string &path,
                                const std::vector<int64_t> &shape,
                                const std::vector<float> &data) {
  try {
    return writeNpyAtomicImpl(path, shape, data);
  } catch (const std::exception &e) {
    return Status::error(fmt::format("cannot write {}: {}", path, e.what()));
  }
}
