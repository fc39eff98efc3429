// A kernel that compiles to a PTX `trap`: a host constexpr table read at a run-time
// index through a constexpr function (allowed by --expt-relaxed-constexpr). scripts/test.sh
// checks that tests/cuda/ptx_has_no_trap.sh finds it, so that check cannot pass vacuously.
constexpr double kTable[4] = {1.0, 2.0, 3.0, 4.0};
constexpr double lookup(int i) { return kTable[i]; }
__global__ void read_host_table(double* out, int i) { out[0] = lookup(i); }
