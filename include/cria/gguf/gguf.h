#pragma once
// Everything of the GGUF module in one include.

#include "cria/gguf/file.h"
#include "cria/gguf/load_mode.h"
#include "cria/gguf/tensor_info.h"
#include "cria/gguf/value.h"
#include "cria/gguf/writer.h"
