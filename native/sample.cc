// Drawing the next token of each decoded row from its logits, where the logits are (the wasm heap),
// so a sampling step hands JS one token and one log-prob per row instead of [rows, V] floats.
//
// The same arithmetic as src/model/generate.ts drawToken (temperature only: no top-k or top-p) and
// logSoftmaxAt, in double precision like JS: the first maximum, weights exp((l - max) / temperature)
// summed in order, the token where u * total first goes below zero.
#include <cmath>
#include <vector>

#include "kernels.h"

namespace agro {

void sample_rows(const float *logits, long n, long V, double temperature, const double *u, int *tokens, double *logp) {
  std::vector<double> w(V);
  for (long i = 0; i < n; i++) {
    const float *l = logits + i * V;
    long best = 0;
    for (long j = 1; j < V; j++)
      if (l[j] > l[best]) best = j;
    const double maxL = l[best];
    double sum1 = 0;  // sum of exp(l - max): the temperature-1 normaliser of the log-prob
    long tok = best;
    if (temperature > 0) {
      const double inv = 1 / temperature;
      double total = 0;
      for (long j = 0; j < V; j++) total += (w[j] = std::exp((l[j] - maxL) * inv));
      if (temperature == 1) sum1 = total;
      double r = u[i] * total;
      tok = V - 1;
      for (long j = 0; j < V; j++) {
        r -= w[j];
        if (r < 0) {
          tok = j;
          break;
        }
      }
    }
    if (temperature != 1)
      for (long j = 0; j < V; j++) sum1 += std::exp(l[j] - maxL);
    tokens[i] = (int)tok;
    logp[i] = l[tok] - maxL - std::log(sum1);
  }
}

}  // namespace agro
