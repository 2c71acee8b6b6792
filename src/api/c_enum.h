// The enum fields of the C API's structs as the ints a caller stored. C lets any int sit in an
// enum field, but C++ may only load an enum value within its enumerators' range (UBSan:
// "load of value 99, which is not a valid value"), so a field that may hold a caller's bad
// number is read as an int, checked, and only then used as the enum.
#pragma once

#include <cstring>
#include <type_traits>

#include "base/error.h"

namespace sd::api {

template <class E>
int c_enum_int(const E& field) {
    static_assert(std::is_enum_v<E> && sizeof(E) == sizeof(int));
    int value;
    std::memcpy(&value, &field, sizeof value);
    return value;
}

// The field when it holds one of [0, count), else an sd::Error naming `what` and the number.
template <class E>
E c_enum(const E& field, E count, const char* what) {
    const int value = c_enum_int(field);
    SD_CHECK(value >= 0 && value < static_cast<int>(count), "unknown %s %d", what, value);
    return static_cast<E>(value);
}

// As c_enum, with `count` itself accepted: the field left unset.
template <class E>
E c_enum_or_unset(const E& field, E count, const char* what) {
    return c_enum_int(field) == static_cast<int>(count) ? count : c_enum(field, count, what);
}

}  // namespace sd::api
