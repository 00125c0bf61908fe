#pragma once
// Version and build identity of this cria build.

namespace cria {
const char* version_string();  // semantic version, e.g. "0.1.0"
const char* git_commit();      // short commit hash, "-dirty" when built from a modified tree
unsigned build_number();       // number of commits in the history the build came from
}  // namespace cria
