# The lit configuration of dynb's compiler tests (tests/lit) and end-to-end
# checks (tests/e2e). Tools come from the build tree and LLVM 19.
import os
import shutil

import lit.formats

config.name = "dynb"
config.test_format = lit.formats.ShTest(execute_external=True)
config.suffixes = [".mlir", ".test"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.dynb_obj_root, "tests")
config.excludes = ["unit", "fuzz", "Inputs", "lit.cfg.py", "lit.site.cfg.py.in"]

# The kernel cache of the run (tests/run-all.sh), or none: without HOME or
# DYNB_CACHE_DIR, dynbc finds no cache directory and compiles every module.
if "DYNB_CACHE_DIR" in os.environ:
    config.environment["DYNB_CACHE_DIR"] = os.environ["DYNB_CACHE_DIR"]
config.environment["PATH"] = os.pathsep.join(
    [config.dynb_tools_dir, config.llvm_tools_dir, config.environment.get("PATH", os.environ["PATH"])])
config.substitutions.append(("%dynb_src", config.dynb_src_root))
config.substitutions.append(("%dynb_obj", config.dynb_obj_root))
config.substitutions.append(("%sst", os.path.join(config.dynb_src_root, "examples", "treelstm", "data", "sst")))
config.substitutions.append(("%python", config.python_executable))

# ptxas (from a CUDA toolkit) assembles the PTX of `dynbc compile --emit=ptx`
# where it exists; tests that need it say REQUIRES: ptxas.
ptxas = shutil.which("ptxas") or "/usr/local/cuda/bin/ptxas"
if os.access(ptxas, os.X_OK):
    config.available_features.add("ptxas")
    config.substitutions.append(("%ptxas", ptxas))

# mlir-translate and opt turn dynb-opt's LLVM dialect into the optimised IR
# of `dynbc compile --emit=llvm` (O3 for this machine's triple and CPU, as
# the JIT's makeOptimizingTransformer does); tests of that say
# REQUIRES: llvm-opt.
llvm_config = os.path.join(config.llvm_tools_dir, "llvm-config")
llvm_opt = os.path.join(config.llvm_tools_dir, "opt")
mlir_translate = os.path.join(config.llvm_tools_dir, "mlir-translate")
if all(os.access(t, os.X_OK) for t in (llvm_config, llvm_opt, mlir_translate)):
    import subprocess
    host = subprocess.run([llvm_config, "--host-target"], capture_output=True,
                          text=True).stdout.strip()
    if host:
        config.available_features.add("llvm-opt")
        config.substitutions.append(("%mlir_to_llvmir", mlir_translate + " --mlir-to-llvmir"))
        config.substitutions.append(("%opt_o3", llvm_opt + " -O3 -S -mtriple=" + host + " -mcpu=native"))

# A stand-in CUDA driver library with no device (tests/unit/runtime
# FakeCudaDriver.cpp), for the paths of --device=cuda a machine without a
# GPU never takes.
config.substitutions.append(("%fake_cuda", os.path.join(config.dynb_obj_root, "lib", "libdynb-fake-cuda.so")))

# Sanitized builds (tools/dev test --sanitize=...): ASan's quarantine and
# shadow memory and TSan's history inflate resident memory, and every
# sanitizer slows the program by a load-dependent factor, so bounds on
# memory or time measure the sanitizer and the machine's load, not dynb.
# Tests still run their commands and check their outputs there; the bound
# itself is checked only where this feature is absent, as in
#   RUN: %if sanitized %{ echo "bound not checked: sanitized build" %} %else %{ ... %}
# (tests/e2e/sst-dev-stream.test does).
if config.dynb_sanitize:
    config.available_features.add("sanitized")
    for name in config.dynb_sanitize.split(","):
        config.available_features.add("sanitize-" + name)
