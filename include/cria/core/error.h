#pragma once
// The one exception type cria throws for bad input and failed operations.
// Messages are meant for users: they name the file, field or request at fault.

#include <stdexcept>
#include <string>

namespace cria {

class Error : public std::runtime_error {
public:
    explicit Error(const std::string& message) : std::runtime_error(message) {}
};

}  // namespace cria
