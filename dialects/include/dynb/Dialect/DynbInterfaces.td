//===- DynbInterfaces.td - The batchable-op interface -----*- tablegen -*-===//
#ifndef DYNB_INTERFACES_TD
#define DYNB_INTERFACES_TD

include "mlir/IR/OpBase.td"

def Dynb_BatchableOpInterface : OpInterface<"BatchableOpInterface"> {
  let cppNamespace = "::dynb";
  let description = [{
    An op that may appear in a `dynb.instance` and that `dynb-batch` merges
    with the ops of equal signature into one launch. The signature is the
    op's name, attributes, operand and result types; an op says here which
    of its attributes may differ within one launch, how its launch is
    built, and what names its signature in reports. Every other decision
    of the batching code is the same for all ops, so a new per-instance op
    needs nothing in it beyond this interface.
  }];
  let methods = [
    InterfaceMethod<[{
        Whether the attribute `name` may differ between the members of one
        launch (it becomes per-row data of the launch, as an embedding's row
        does) instead of being part of the signature.
      }],
      "bool", "isPerRowAttribute", (ins "::mlir::StringAttr":$name), [{}],
      [{ return false; }]>,
    InterfaceMethod<[{
        Builds the one launch of `members` (ops of this op's signature, this
        op first) at the builder's point: `operands` are the members'
        operands stacked row by row, `resultTypes` this op's with a leading
        batch dimension. The default is the same op on the batched values,
        which is right for every op that works on the last dimensions.
      }],
      "::mlir::Operation *", "buildLaunch",
      (ins "::mlir::OpBuilder &":$b,
           "::llvm::ArrayRef<::mlir::Operation *>":$members,
           "::mlir::TypeRange":$resultTypes,
           "::mlir::ValueRange":$operands), [{}],
      [{
        ::mlir::OperationState state($_op->getLoc(), $_op->getName());
        state.addOperands(operands);
        state.addAttributes($_op->getAttrs());
        state.addTypes(resultTypes);
        return b.create(state);
      }]>,
    InterfaceMethod<[{
        Writes what tells this op's signature apart besides its name and
        types (a callee, a table, a weight), with a leading space; nothing
        by default.
      }],
      "void", "describeSignature", (ins "::llvm::raw_ostream &":$os), [{}],
      [{ (void)os; }]>,
  ];
}

#endif // DYNB_INTERFACES_TD
