// Inputs that libFuzzer (tests/fuzz/libfuzzer/, tools/fuzz/libfuzzer.sh) found to crash a reader,
// each now refused with one clear InputError.
#include <catch2/catch.hpp>

#include "models/device_spec.h"
#include "models/errors.h"
#include "models/model_card.h"

namespace terasim {
namespace {

TEST_CASE("a JSON number too large for a double is bad input, not an uncaught exception",
          "[fuzz][regression]") {
  // fuzz_model_card: nlohmann's out_of_range.406 ("number overflow") escaped ParseJson and
  // ended the process in std::terminate.
  const std::string card =
      "{\"name\": \"x\", \"layers\": 2, \"hidden\": 21E1111111111111111111111111111111}";
  CHECK_THROWS_MATCHES(
      ParseModelCard(card, "card.json"), InputError,
      Catch::Message("card.json: invalid JSON: [json.exception.out_of_range.406] number "
                     "overflow parsing '21E1111111111111111111111111111111'"));
  // Every JSON loader shares ParseJson: the device spec refuses it the same way.
  CHECK_THROWS_AS(ParseDeviceSpec("{\"peak\": 1e99999}", "device.json"), InputError);
}

}  // namespace
}  // namespace terasim
