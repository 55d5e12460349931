// hash.cpp: MD5 (RFC 1321) and the DFTracer-compatible string hash built on it.
#include "base/hash.hpp"

#include <cstring>

namespace dftrace::detail {

namespace {

constexpr uint32_t k_sines[64] = {
    0xd76aa478, 0xe8c7b756, 0x242070db, 0xc1bdceee, 0xf57c0faf, 0x4787c62a, 0xa8304613, 0xfd469501,
    0x698098d8, 0x8b44f7af, 0xffff5bb1, 0x895cd7be, 0x6b901122, 0xfd987193, 0xa679438e, 0x49b40821,
    0xf61e2562, 0xc040b340, 0x265e5a51, 0xe9b6c7aa, 0xd62f105d, 0x02441453, 0xd8a1e681, 0xe7d3fbc8,
    0x21e1cde6, 0xc33707d6, 0xf4d50d87, 0x455a14ed, 0xa9e3e905, 0xfcefa3f8, 0x676f02d9, 0x8d2a4c8a,
    0xfffa3942, 0x8771f681, 0x6d9d6122, 0xfde5380c, 0xa4beea44, 0x4bdecfa9, 0xf6bb4b60, 0xbebfbc70,
    0x289b7ec6, 0xeaa127fa, 0xd4ef3085, 0x04881d05, 0xd9d4d039, 0xe6db99e5, 0x1fa27cf8, 0xc4ac5665,
    0xf4292244, 0x432aff97, 0xab9423a7, 0xfc93a039, 0x655b59c3, 0x8f0ccc92, 0xffeff47d, 0x85845dd1,
    0x6fa87e4f, 0xfe2ce6e0, 0xa3014314, 0x4e0811a1, 0xf7537e82, 0xbd3af235, 0x2ad7d2bb, 0xeb86d391};
constexpr uint8_t k_shifts[64] = {7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22,
                                  5, 9,  14, 20, 5, 9,  14, 20, 5, 9,  14, 20, 5, 9,  14, 20,
                                  4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23,
                                  6, 10, 15, 21, 6, 10, 15, 21, 6, 10, 15, 21, 6, 10, 15, 21};

inline uint32_t rotl(uint32_t x, unsigned c) { return (x << c) | (x >> (32 - c)); }

// One step of round R: f of (b, c, d), the message word g (fixed per step: the loops below
// unroll, so neither the choice of f nor g costs a branch or a division).
template <int R>
inline uint32_t md5_f(uint32_t b, uint32_t c, uint32_t d) {
  if constexpr (R == 0) return (b & c) | (~b & d);
  if constexpr (R == 1) return (d & b) | (~d & c);
  if constexpr (R == 2) return b ^ c ^ d;
  return c ^ (b | ~d);
}
template <int R>
constexpr unsigned md5_g(unsigned i) {
  if constexpr (R == 0) return i;
  if constexpr (R == 1) return (5 * i + 1) % 16;
  if constexpr (R == 2) return (3 * i + 5) % 16;
  return (7 * i) % 16;
}
template <int R>
inline void md5_round(uint32_t &a, uint32_t &b, uint32_t &c, uint32_t &d, const uint32_t *m) {
#pragma GCC unroll 16
  for (unsigned i = 16 * R; i < 16 * (R + 1); ++i) {
    const uint32_t f = md5_f<R>(b, c, d);
    const uint32_t next = d;
    d = c;
    c = b;
    b = b + rotl(a + f + k_sines[i] + m[md5_g<R>(i)], k_shifts[i]);
    a = next;
  }
}

void md5_block(uint32_t state[4], const uint8_t *block) {
  uint32_t m[16];
  for (int i = 0; i < 16; ++i)
    m[i] = uint32_t(block[i * 4]) | uint32_t(block[i * 4 + 1]) << 8 |
           uint32_t(block[i * 4 + 2]) << 16 | uint32_t(block[i * 4 + 3]) << 24;
  uint32_t a = state[0], b = state[1], c = state[2], d = state[3];
  md5_round<0>(a, b, c, d, m);
  md5_round<1>(a, b, c, d, m);
  md5_round<2>(a, b, c, d, m);
  md5_round<3>(a, b, c, d, m);
  state[0] += a;
  state[1] += b;
  state[2] += c;
  state[3] += d;
}

}  // namespace

std::array<uint8_t, 16> md5(std::string_view data) {
  uint32_t state[4] = {0x67452301, 0xefcdab89, 0x98badcfe, 0x10325476};
  const auto *p = reinterpret_cast<const uint8_t *>(data.data());
  size_t n = data.size();
  size_t full = n / 64;
  for (size_t i = 0; i < full; ++i) md5_block(state, p + i * 64);
  uint8_t tail[128] = {};
  const size_t rest = n % 64;
  std::memcpy(tail, p + full * 64, rest);
  tail[rest] = 0x80;
  const size_t tail_len = rest < 56 ? 64 : 128;
  const uint64_t bits = static_cast<uint64_t>(n) * 8;
  for (int i = 0; i < 8; ++i) tail[tail_len - 8 + i] = static_cast<uint8_t>(bits >> (8 * i));
  md5_block(state, tail);
  if (tail_len == 128) md5_block(state, tail + 64);
  std::array<uint8_t, 16> out{};
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j) out[i * 4 + j] = static_cast<uint8_t>(state[i] >> (8 * j));
  return out;
}

uint64_t dftracer_hash(std::string_view s) {
  const auto digest = md5(s);
  uint64_t h = 0;
  for (uint8_t byte : digest) h = (h << 4) | (byte >> 4);
  return h;
}

}  // namespace dftrace::detail
