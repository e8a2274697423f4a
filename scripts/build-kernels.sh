#!/bin/sh
# Rebuild the WebAssembly kernels in src/model/kernels from their C sources. The .wasm files are
# committed, so users and CI never need a compiler; run this after editing a .c file.
# Needs clang and wasm-ld with the wasm32 target (Debian: apt-get install clang-16 lld-16).
set -eu
cd "$(dirname "$0")/../src/model/kernels"
CC=${CC:-$(command -v clang-16 || command -v clang)}
for src in *.c; do
  out="${src%.c}.wasm"
  "$CC" --target=wasm32 -O3 -msimd128 -fno-builtin -nostdlib -ffp-contract=off \
    -Wall -Wextra -Werror \
    -Wl,--no-entry -Wl,--export=__heap_base -Wl,--max-memory=4294967296 -Wl,-z,stack-size=65536 \
    -o "$out" "$src"
  echo "built src/model/kernels/$out ($(wc -c < "$out") bytes)"
done
