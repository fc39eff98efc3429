// The Program API's density-matrix side: per-call checks of channel parameters
// that come from inputs or weights, and density_matrices().
#include <string>

#include "core/dm_compiled.hpp"
#include "core/plan.hpp"
#include "qfleet/error.hpp"
#include "qfleet/program.hpp"

namespace qfleet::detail {

template <class R>
void check_channel_args(const Plan& p, const BatchArgs<R>& a, bool per_sample_weights) {
  if (!p.dm || p.dm->checked_channels.empty()) return;
  const DmCompiled& mp = *p.dm;
  const kern::DmPlan& v = mp.view;
  // Without inputs or per-sample weights every sample has the same parameters.
  bool varies = false;
  for (int k : mp.checked_channels) {
    const kern::DmOp& op = v.ops[k];
    varies |= (op.reads & kern::kReadsInputs) || (per_sample_weights && (op.reads & kern::kReadsWeights));
  }
  const std::size_t samples = varies ? a.batch : 1;
  for (std::size_t b = 0; b < samples; ++b) {
    for (int k : mp.checked_channels) {
      const kern::DmOp& op = v.ops[k];
      double q[kMaxChannelParams] = {0, 0, 0, 0};
      for (int j = 0; j < op.n_params; ++j) {
        const kern::ParamDesc& d = v.params[op.first_param + j];
        if (d.kind == kern::kParamConstant) {
          q[j] = d.value;
        } else if (d.kind == kern::kParamInput) {
          q[j] = d.scale * double(a.inputs[b * std::size_t(v.n_inputs) + std::size_t(d.index)]);
        } else {
          q[j] = d.scale * double(per_sample_weights ? a.weights[b * std::size_t(v.n_weights) + std::size_t(d.index)]
                                                     : a.weights[std::size_t(d.index)]);
        }
      }
      const std::string e = channel_params_error(op.channel, q);
      if (!e.empty()) {
        throw Error((varies ? "sample " + std::to_string(b) + ": " : std::string()) + mp.op_names[std::size_t(k)] +
                    ": " + e + " (its parameters come from the call's inputs or weights)");
      }
    }
  }
}

template void check_channel_args<float>(const Plan&, const BatchArgs<float>&, bool);
template void check_channel_args<double>(const Plan&, const BatchArgs<double>&, bool);

}  // namespace qfleet::detail
