// A running count of the dense ops' floating-point operations, for benchmarks that report
// GFLOP/s of a whole network. Counted: linear and matmul 2*M*N*K, conv2d
// 2*OH*OW*O*C*KH*KW per image, attention 4*B*H*Lq*Lk*D (Q.K^T and P.V). Not counted: norms,
// activations, softmax, elementwise ops (memory-bound, a few percent of the work).
#pragma once

namespace sd {

void count_flops(double flops);
double counted_flops();
void reset_flop_counter();

}  // namespace sd
