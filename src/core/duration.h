#pragma once
// Durations in messages, written the way the configuration reads them.
#include <string>

#include "core/clock.h"

namespace payorch {

// "21h36m", "1h40s", "1m30s", "250ms": each unit from days down to milliseconds that is not
// zero; "0ms" (or the negative count with "ms") for a duration that is not positive.
std::string format_duration(Millis d);

}  // namespace payorch
