// llama-server's stop_type from the scheduler's finish reason. End of
// generation is not reachable on demand with the test model (stories260K runs
// to any n_predict), so "eos" is checked here; the HTTP tests see the others.
#include <gtest/gtest.h>

#include "server/native_completion.h"

using cria::server::native_stop_type;

TEST(NativeStopType, FromFinishReasonAndStopWord) {
    EXPECT_EQ(native_stop_type("stop", ""), "eos");
    EXPECT_EQ(native_stop_type("stop", "The"), "word");
    EXPECT_EQ(native_stop_type("length", ""), "limit");
    EXPECT_EQ(native_stop_type("cancelled", ""), "none");
}
