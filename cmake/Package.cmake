# A Debian package of what `cmake --install` installs, for Debian 12:
# `tools/dev package` (cpack -G DEB in the build directory). It installs to
# /usr and depends on the runtime packages of the libraries dynb links
# (libMLIR and libLLVM stay in /usr/lib/llvm-19/lib, found through the
# installed RPATH); tests/e2e/package.test unpacks it and runs its dynbc.
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME dynb)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
  "graph compiler that batches dynamic neural networks (MLIR/LLVM 19)")
set(CPACK_PACKAGE_CONTACT "dynb developers <dynb@localhost>")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION devel)
# The shared libraries dynbc, libdynb and the Python module load directly
# (`ldd build/bin/dynbc`); theirs come with them.
set(CPACK_DEBIAN_PACKAGE_DEPENDS
  "libc6, libstdc++6, libgomp1, libllvm19, libmlir-19, libdnnl2, libfmt9, libsimdjson14")
# Building an application against the installed headers and CMake package
# needs the libraries' headers too; the Python module wants NumPy.
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS
  "llvm-19-dev, libmlir-19-dev, libdnnl-dev, libfmt-dev, python3, python3-numpy")
include(CPack)
