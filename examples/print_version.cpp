// The smallest program using the installed libcria: prints the library version.
// Build: g++ print_version.cpp $(pkg-config --cflags --libs cria)
#include <cstdio>

#include "cria/core/version.h"

int main() {
    std::printf("libcria %s (commit %s, build %u)\n", cria::version_string(), cria::git_commit(), cria::build_number());
    return 0;
}
