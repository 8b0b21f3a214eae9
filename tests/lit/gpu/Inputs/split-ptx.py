"""Splits `dynbc compile --emit=ptx` output into one .ptx file a module.

dynbc prints every module between '// ---- ptx module @NAME (CHIP)' and
'// ---- end ptx module @NAME' lines; ptxas takes one module a file.
Usage: split-ptx.py IN.ptx OUTDIR; prints 'N modules'.
"""
import os
import re
import sys

src, outdir = sys.argv[1], sys.argv[2]
os.makedirs(outdir, exist_ok=True)
count = 0
current = None
for line in open(src):
    begin = re.match(r"// ---- ptx module @(\S+) ", line)
    if begin:
        assert current is None, "nested ptx module at " + line
        current = open(os.path.join(outdir, begin.group(1) + ".ptx"), "w")
        count += 1
        continue
    if line.startswith("// ---- end ptx module @"):
        assert current is not None, "end without begin: " + line
        current.close()
        current = None
        continue
    if current is not None:
        current.write(line)
assert current is None, "unterminated ptx module"
print(count, "modules")
