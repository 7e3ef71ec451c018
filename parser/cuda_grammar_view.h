// A Grammar as every cuda/ kernel family takes it (cuda/common/grammar_view.h: views into the
// grammar's arrays, which must outlive the view).
#pragma once

#include "cuda/common/grammar_view.h"
#include "grammar_io/grammar.h"

namespace cky {

cuda::GrammarView CudaGrammarView(const Grammar& grammar);

}  // namespace cky
