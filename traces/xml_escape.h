// XmlEscape: text made safe inside SVG/XML elements and attributes (&, <, >, " escaped).
// Shared by the SVG writers. Thread safety: a pure function.
#pragma once

#include <string>

namespace terasim {

std::string XmlEscape(const std::string& text);

}  // namespace terasim
