// The pipeline replay of an estimate.
#include "estimate/replay.h"

namespace trainsim::detail {

int64_t max_in_flight(const RankSteps& steps, bool split) {
  struct State {
    int64_t live = 0, best = 0;
  };
  const Pass frees = split ? Pass::BackwardWeight : Pass::Backward;
  return walk(steps, State{}, [frees](State& st, const Step& s) {
           if (s.pass == Pass::Forward) st.best = std::max(st.best, ++st.live);
           if (s.pass == frees) --st.live;
         }).best;
}


}  // namespace trainsim::detail
