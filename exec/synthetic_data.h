// Deterministic synthetic numbers for the executor: weights from (seed, tensor, index), input
// activations and tokens from (seed, global sequence, token). Counter-based (SplitMix64 of a
// combined key), so any shard of any tensor can be generated directly, in any order, on any
// device, and every tensor-parallel degree starts from the same model. Pure functions.
#pragma once

#include <cstdint>

namespace terasim {

// SplitMix64 finalizer: a bijective mix of 64 bits.
inline uint64_t MixBits(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// A hash of four counters under `seed`.
inline uint64_t HashKey(uint64_t seed, uint64_t a, uint64_t b, uint64_t c, uint64_t d) {
  uint64_t h = MixBits(seed);
  h = MixBits(h ^ a);
  h = MixBits(h ^ b);
  h = MixBits(h ^ c);
  return MixBits(h ^ d);
}

// Uniform in [-1, 1), exactly representable in fp32 (24 random bits).
inline float SymmetricUniform(uint64_t seed, uint64_t a, uint64_t b, uint64_t c, uint64_t d) {
  const uint64_t bits = HashKey(seed, a, b, c, d) >> 40;  // 24 bits
  return static_cast<float>(static_cast<double>(bits) / static_cast<double>(1ULL << 23) - 1.0);
}

// Stream tags that keep the synthetic families apart.
inline constexpr uint64_t kTagWeight = 1;
inline constexpr uint64_t kTagInput = 2;
inline constexpr uint64_t kTagToken = 3;

// Input activation feature `feature` of token `token` of global sequence `sequence`, in [-1, 1).
inline float SyntheticInput(uint64_t seed, int64_t sequence, int token, int feature) {
  return SymmetricUniform(seed, kTagInput, static_cast<uint64_t>(sequence),
                          static_cast<uint64_t>(token), static_cast<uint64_t>(feature));
}

// Token id at position `token` (0..sequence, one past the end for the last target) of global
// sequence `sequence`, in [0, vocab).
inline int SyntheticToken(uint64_t seed, int64_t sequence, int token, int vocab) {
  return static_cast<int>(
      HashKey(seed, kTagToken, static_cast<uint64_t>(sequence), static_cast<uint64_t>(token), 0) %
      static_cast<uint64_t>(vocab));
}

}  // namespace terasim
