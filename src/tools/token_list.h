#pragma once
// Token ids given on the command line (--tokens 5,17,3): for models without a
// tokenizer, such as llama.cpp's architecture fixtures, and for exact checks.

#include <string>
#include <vector>

#include "cria/runtime/batch.h"

namespace cria::tools {

// "5,17,3" (spaces allowed around the commas) -> ids; anything else is an Error
// naming the offset. The ids are not checked against a vocabulary here.
std::vector<runtime::TokenId> parse_token_list(const std::string& text);

}  // namespace cria::tools
