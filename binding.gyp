{
  "targets": [
    {
      "target_name": "agro_native",
      "sources": ["native/addon.cc", "native/gemm.cc", "native/softmax.cc", "native/elementwise.cc", "native/attention.cc", "native/decode.cc"],
      "cflags_cc": ["-O3", "-std=c++17", "-fno-math-errno"],
      "cflags_cc!": ["-O2"]
    }
  ]
}
