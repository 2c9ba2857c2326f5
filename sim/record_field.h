// A record's fields, declared once beside the record: each field's name in the outputs, its
// member, unit and meaning, and how the partial records of several MPI ranks combine. The MPI
// merge, the --json report, the HDF5 writer and docs/hdf5-schema.md all walk these tables, so a
// new field needs one line in its record's table and nothing else.
//
// A record type R declares its table as `constexpr auto record_fields(std::type_identity<R>)`
// returning a std::tuple of field() and computed() entries, found by argument-dependent lookup.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <string>
#include <tuple>
#include <type_traits>

namespace fabtwin {

// How a field of one rank's record combines with the same record of another rank (only the
// rank that ran a component fills its records; the others hold zeros there).
enum class Merge : uint8_t {
  Same,  // every rank knows it alike (names, indices, configuration): the first rank's is kept
  Sum,   // counts and accumulated times
  Max,   // peaks and latest times
  Any,   // flags: set if any rank set it
};

// A stored member. A member that is itself a record (or an array of records) is merged field by
// field, and the outputs show its fields in its place (an array: each field over the elements,
// combined by that field's Merge rule).
template <class R, class T>
struct Field {
  const char* name;  // as in the HDF5 tables and the --json report
  T R::*member;
  const char* unit;
  const char* meaning;
  Merge merge;
  const bool R::*present;  // when not null: the outputs write -1 where this flag is false
  int text_length;         // strings: the fixed length of the HDF5 field
};

template <class R, class T>
constexpr Field<R, T> field(const char* name, T R::*member, const char* unit, const char* meaning,
                            Merge merge = Merge::Same, const bool R::*present = nullptr) {
  return {name, member, unit, meaning, merge, present, 32};
}

// A string member stored in the HDF5 tables as `length` bytes.
template <class R>
constexpr Field<R, std::string> text(const char* name, std::string R::*member, int length,
                                     const char* meaning) {
  return {name, member, "", meaning, Merge::Same, nullptr, length};
}

// A figure the outputs derive from the stored fields (not stored, not merged).
template <class R, class T>
struct Computed {
  const char* name;
  T (*get)(const R&);
  const char* unit;
  const char* meaning;
  int text_length;
};

template <class R, class T>
constexpr Computed<R, T> computed(const char* name, T (*get)(const R&), const char* unit,
                                  const char* meaning, int text_length = 32) {
  return {name, get, unit, meaning, text_length};
}

template <class R>
constexpr auto fields_of() {
  return record_fields(std::type_identity<R>{});
}

template <class T>
concept Record = requires {
  record_fields(std::type_identity<T>{});
};

template <class T>
struct is_record_array : std::false_type {};
template <class T, size_t N>
struct is_record_array<std::array<T, N>> : std::bool_constant<Record<T>> {};

template <class R, class F>
constexpr void for_each_field(F&& f) {
  std::apply([&](const auto&... entry) { (f(entry), ...); }, fields_of<R>());
}

template <class T>
struct is_field : std::false_type {};
template <class R, class T>
struct is_field<Field<R, T>> : std::true_type {};

// The value type of a table entry.
template <class Entry>
struct entry_value;
template <class R, class T>
struct entry_value<Field<R, T>> {
  using type = T;
};
template <class R, class T>
struct entry_value<Computed<R, T>> {
  using type = T;
};
template <class Entry>
using entry_value_t = typename entry_value<std::decay_t<Entry>>::type;

// Whether a table entry is a stored member (a Field), not a Computed one.
template <class Entry>
inline constexpr bool is_stored = is_field<std::decay_t<Entry>>::value;

template <Record R>
void merge_record(R& into, const R& from);

// Combines one value by `rule`.
template <class T>
void merge_value(T& into, const T& from, Merge rule) {
  if constexpr (Record<T>) {
    merge_record(into, from);
  } else if constexpr (is_record_array<T>::value) {
    for (size_t i = 0; i < into.size(); ++i) merge_record(into[i], from[i]);
  } else if constexpr (std::is_same_v<T, bool>) {
    if (rule == Merge::Any) into = into || from;
  } else if constexpr (requires { into += from; }) {
    if (rule == Merge::Sum) into += from;
    if (rule == Merge::Max) into = std::max(into, from);
  } else if constexpr (requires { into < from; }) {
    if (rule == Merge::Max) into = std::max(into, from);
  }
}

// Combines `from` into `into`, every stored field by its rule.
template <Record R>
void merge_record(R& into, const R& from) {
  for_each_field<R>([&](const auto& f) {
    if constexpr (is_stored<decltype(f)>) merge_value(into.*f.member, from.*f.member, f.merge);
  });
}

}  // namespace fabtwin
