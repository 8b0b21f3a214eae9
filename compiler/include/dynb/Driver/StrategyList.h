//===- StrategyList.h - Strategy lists and byte sizes from the CLI -*- C++
//-*-===//
#ifndef DYNB_DRIVER_STRATEGYLIST_H
#define DYNB_DRIVER_STRATEGYLIST_H

#include "dynb/Batching/Scheduler.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <optional>
#include <string>
#include <vector>

namespace dynb {

/// The strategies named, in order: each of none, depth, agenda, or "all"
/// for every strategy; no name means agenda. With `single`, exactly one.
llvm::Expected<std::vector<BatchingStrategy>>
parseStrategyList(llvm::ArrayRef<std::string> names, bool single);

/// "16G" -> 16 GiB (K, M and G suffixes, binary); plain numbers are bytes.
std::optional<uint64_t> parseByteSize(llvm::StringRef text);

} // namespace dynb

#endif // DYNB_DRIVER_STRATEGYLIST_H
