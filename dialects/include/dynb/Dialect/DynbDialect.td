//===- DynbDialect.td - The dynb dialect definition --------*- tablegen -*-===//
#ifndef DYNB_DIALECT_TD
#define DYNB_DIALECT_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/CommonTypeConstraints.td"

def Dynb_Dialect : Dialect {
  let name = "dynb";
  let cppNamespace = "::dynb";
  let summary = "Batches of per-instance graphs of dynamic neural networks";
  let description = [{
    The dynb dialect expresses a model (parameters and modules) and a batch
    of instances whose graphs differ. Modules are `func.func` operations whose
    bodies use dynb's per-instance ops; `dynb.param` declares a parameter
    shared by every instance; each `dynb.instance` holds one instance's graph
    on *unbatched* values.

    Every per-instance op works on the last dimension of its operands, so the
    same op applies unchanged to a batched value that carries a leading batch
    dimension. The batching pass (`dynb-batch`) replaces the instances with a
    `dynb.schedule` of batched launches: `dynb.lookup`, `dynb.batched_call`
    and batched per-instance ops, connected by `dynb.gather`.

    ```mlir
    dynb.param @E : tensor<100x16xf32>
    func.func @leaf(%x: tensor<16xf32>) -> tensor<16xf32> { ... }
    dynb.instance {
      %x = dynb.embedding @E [17] : tensor<16xf32>
      %h = dynb.call @leaf(%x) : (tensor<16xf32>) -> tensor<16xf32>
      dynb.output %h : tensor<16xf32>
    }
    ```
  }];
  let dependentDialects = ["::mlir::func::FuncDialect"];
}

class Dynb_Op<string mnemonic, list<Trait> traits = []>
    : Op<Dynb_Dialect, mnemonic, traits>;

#endif // DYNB_DIALECT_TD
