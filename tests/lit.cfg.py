# The lit configuration of dynb's compiler tests (tests/lit) and end-to-end
# checks (tests/e2e). Tools come from the build tree and LLVM 19.
import os

import lit.formats

config.name = "dynb"
config.test_format = lit.formats.ShTest(execute_external=True)
config.suffixes = [".mlir", ".test"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.dynb_obj_root, "tests")
config.excludes = ["unit", "fuzz", "Inputs", "lit.cfg.py", "lit.site.cfg.py.in"]

config.environment["PATH"] = os.pathsep.join(
    [config.dynb_tools_dir, config.llvm_tools_dir, config.environment.get("PATH", os.environ["PATH"])])
config.substitutions.append(("%dynb_src", config.dynb_src_root))
config.substitutions.append(("%sst", os.path.join(config.dynb_src_root, "examples", "treelstm", "data", "sst")))
config.substitutions.append(("%python", config.python_executable))
