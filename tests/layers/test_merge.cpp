#include "../helpers.hpp"
