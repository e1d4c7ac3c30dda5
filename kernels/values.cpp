// reduce-tune: host values of any dtype: Scalar's conversions, identities, the host finish.
#include "kernels/values.h"

#include <cstring>
#include <sstream>

namespace reduce_tune {

template <typename T> Scalar Scalar::of(T v) {
  Scalar s;
  if constexpr (std::is_same_v<T, std::int32_t>) s.dtype = DType::i32;
  else if constexpr (std::is_same_v<T, std::uint32_t>) s.dtype = DType::u32;
  else if constexpr (std::is_same_v<T, std::int64_t>) s.dtype = DType::i64;
  else if constexpr (std::is_same_v<T, float>) s.dtype = DType::f32;
  else if constexpr (is_half_float_v<T>) s.dtype = T::dtype;
  else if constexpr (std::is_same_v<T, std::uint8_t>) s.dtype = DType::u8;
  else s.dtype = DType::f64;
  std::memcpy(&s.bits, &v, sizeof v);
  return s;
}

template <typename T> T Scalar::as() const {
  T v;
  std::memcpy(&v, &bits, sizeof v);
  return v;
}

template Scalar Scalar::of(std::int32_t);
template Scalar Scalar::of(std::uint32_t);
template Scalar Scalar::of(std::int64_t);
template Scalar Scalar::of(float);
template Scalar Scalar::of(double);
template Scalar Scalar::of(bf16_t);
template Scalar Scalar::of(f16_t);
template Scalar Scalar::of(std::uint8_t);
template std::int32_t Scalar::as() const;
template std::uint32_t Scalar::as() const;
template std::int64_t Scalar::as() const;
template float Scalar::as() const;
template double Scalar::as() const;
template bf16_t Scalar::as() const;
template f16_t Scalar::as() const;
template std::uint8_t Scalar::as() const;

double Scalar::to_double() const {
  return visit_value(dtype, [&](auto t) { return double(as<decltype(t)>()); });
}

std::string Scalar::to_string() const {
  return visit_value(dtype, [&](auto t) {
    std::ostringstream o;
    o.precision(std::numeric_limits<decltype(t)>::max_digits10);
    if constexpr (std::is_same_v<decltype(t), std::uint8_t>) o << unsigned(as<std::uint8_t>());
    else o << as<decltype(t)>();
    return o.str();
  });
}

Scalar identity(DType dtype, Op op) {
  return visit_value(dtype, [op](auto t) { return Scalar::of(identity<decltype(t)>(op)); });
}

Scalar empty_result(Op op, DType result) {
  // argmax and argmin: the calls refuse nothing to reduce; an empty offsets segment gets -1.
  if (op == Op::argmax || op == Op::argmin) return Scalar::of(std::int64_t(-1));
  if (op == Op::logsumexp) // log(0)
    return visit_value(result, [](auto r) {
      using R = decltype(r);
      if constexpr (is_float_like_v<R>) return Scalar::of(R(-std::numeric_limits<double>::infinity()));
      else return Scalar::of(R(0)); // never: a logsumexp is a float
    });
  if (op == Op::mean || op == Op::var || op == Op::std_ || op == Op::var_population ||
      op == Op::std_population)
    return visit_value(result, [](auto r) {
      using R = decltype(r);
      if constexpr (is_float_like_v<R>) return Scalar::of(R(std::numeric_limits<double>::quiet_NaN()));
      else return Scalar::of(R(0)); // never: a mean is a float
    });
  return identity(result, op);
}

Scalar combine_on_host(const HostArray& partials, std::uint64_t count, Op op, DType result) {
  return visit(partials.dtype, [&](auto t) {
    using T = decltype(t);
    const T* p = partials.data<T>();
    // The partials' combination `acc` (exact for integers and min/max; for float sums the double
    // sum) as `result`, rounded once.
    auto as_result = [&](auto acc) {
      return visit_value(result, [&](auto r) {
        using R = decltype(r);
        if constexpr (is_half_float_v<R>) return Scalar::of(R(double(acc)));
        else return Scalar::of(R(acc));
      });
    };
    if constexpr (is_float_like_v<T>) {
      if (combine_kind(op) == OpAtomic::add) {
        double s = 0;
        for (std::uint64_t i = 0; i < count; ++i) s += double(p[i]);
        return as_result(s);
      }
    }
    acc_t<T> acc = identity<acc_t<T>>(op);
    for (std::uint64_t i = 0; i < count; ++i) acc = host_ops::combine(acc, widen(p[i]), op);
    return as_result(acc);
  });
}

} // namespace reduce_tune
