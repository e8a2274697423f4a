{
  "targets": [
    {
      "target_name": "agro_sqlite",
      "sources": ["native/sqlite/agro_sqlite.c"],
      "include_dirs": ["<!(node -p \"require('path').dirname(require.resolve('better-sqlite3/package.json'))\")/deps/sqlite3"],
      "cflags": ["-O2"]
    },
    {
      "target_name": "agro_native",
      "sources": ["native/addon.cc", "native/gemm.cc", "native/softmax.cc", "native/elementwise.cc", "native/attention.cc", "native/decode.cc"],
      "cflags_cc": ["-O3", "-std=c++17", "-fno-math-errno"],
      "cflags_cc!": ["-O2"]
    }
  ]
}
