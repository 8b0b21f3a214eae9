//===- Status.h - Error values of the runtime (no exceptions leave it) ----===//
#ifndef DYNB_RUNTIME_STATUS_H
#define DYNB_RUNTIME_STATUS_H

#include <string>
#include <utility>

namespace dynb::rt {

/// The runtime reports failure as a value: the compiler side turns it into an
/// llvm::Error at the boundary. An empty message means success.
class [[nodiscard]] Status {
public:
  Status() = default;
  static Status ok() { return Status(); }
  static Status error(std::string message) {
    Status s;
    s.failed_ = true;
    s.message_ = std::move(message);
    return s;
  }
  bool isOk() const { return !failed_; }
  explicit operator bool() const { return failed_; } // true on failure
  const std::string &message() const { return message_; }

private:
  bool failed_ = false;
  std::string message_;
};

} // namespace dynb::rt

#endif // DYNB_RUNTIME_STATUS_H
