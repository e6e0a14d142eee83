#include "providers/adapter.h"

#include "core/enum_names.h"

namespace payorch::providers {
namespace {

constexpr EnumNames<CallbackError, 3> callback_error_names{{
    {CallbackError::bad_signature, "bad_signature"},
    {CallbackError::stale_timestamp, "stale_timestamp"},
    {CallbackError::malformed, "malformed"},
}};

constexpr EnumNames<OperationKind, 2> operation_kind_names{{
    {OperationKind::charge, "charge"},
    {OperationKind::refund, "refund"},
}};

}  // namespace

std::string_view to_string(OperationKind k) { return name_of(operation_kind_names, k); }

std::string_view to_string(CallbackError e) { return name_of(callback_error_names, e); }

}  // namespace payorch::providers
