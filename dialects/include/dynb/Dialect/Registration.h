//===- Registration.h - The dialects a dynb program is made of ---*- C++
//-*-===//
//
// A dynb program is the dynb dialect plus func.func modules: every tool and
// library that reads one registers or loads this set, from here, so that a
// new dependency of the dialect is added once.
//
//===----------------------------------------------------------------------===//
#ifndef DYNB_DIALECT_REGISTRATION_H
#define DYNB_DIALECT_REGISTRATION_H

namespace mlir {
class DialectRegistry;
class MLIRContext;
} // namespace mlir

namespace dynb {

/// Adds the dynb dialect and the dialects its programs use to `registry`.
void registerDynbDialects(mlir::DialectRegistry &registry);

/// Loads them into `context` (what an importer needs before building ops).
void loadDynbDialects(mlir::MLIRContext &context);

} // namespace dynb

#endif // DYNB_DIALECT_REGISTRATION_H
