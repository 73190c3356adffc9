// Permutation groups for SymmetryFold (sim/symmetry_fold.h): the permutations of a tensor-
// parallel group's ranks that keep what the topology says about them, and the largest group
// of such permutations that a fold may simulate (one that acts freely: every element but the
// identity moves every rank, so that every orbit has |G| ranks).
//
// A permutation of n points is a vector p with p[i] the image of i. Pure functions.
#pragma once

#include <cstddef>
#include <vector>

namespace terasim {

using Permutation = std::vector<int>;

// The permutations tau of the n = color.size() points, the identity excluded, that keep the
// colors (color[tau[i]] == color[i]) and the pair colors (pair[tau[i]][tau[j]] == pair[i][j],
// pair n x n) and whose cycles all have one length (semiregular: tau and its powers move every
// point or none), in lexicographic order; at most `limit` of them, and the search stops after
// `max_visits` partial assignments (an incomplete list: fewer candidates, never a wrong one).
std::vector<Permutation> SemiregularAutomorphisms(const std::vector<int>& color,
                                                  const std::vector<std::vector<int>>& pair,
                                                  size_t limit, size_t max_visits);

// The group `generators` generate (of permutations of one size), the identity first; empty
// when it has more than max_order elements.
std::vector<Permutation> GeneratedGroup(const std::vector<Permutation>& generators,
                                        size_t max_order);

// Whether every element of `group` but the identity moves every point.
bool ActsFreely(const std::vector<Permutation>& group);

// Indices into `candidates` of generators of a large group that acts freely: for each
// candidate in turn, the group it generates, grown by every later candidate that keeps it free
// and larger; the largest such group (the first of equal order). Empty when no candidate moves
// every point freely.
std::vector<int> LargestFreeGroup(const std::vector<Permutation>& candidates, size_t max_order);

}  // namespace terasim
