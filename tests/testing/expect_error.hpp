// expect_error.hpp: asserts that a call throws gknn::Error with a given code and a message naming what
// went wrong (the file, row or argument), since the message is part of the user-facing contract.
#pragma once

#include <initializer_list>
#include <string>

#include <gtest/gtest.h>

#include "gknn/error.hpp"

namespace gknn::testing {

template <class F>
void expect_error(F&& call, ErrorCode code, std::initializer_list<std::string> message_parts) {
  try {
    call();
    ADD_FAILURE() << "expected gknn::Error(" << to_string(code) << "), nothing was thrown";
  } catch (const Error& e) {
    EXPECT_EQ(to_string(e.code()), std::string(to_string(code))) << "message: " << e.what();
    const std::string message = e.what();
    for (const auto& part : message_parts)
      EXPECT_NE(message.find(part), std::string::npos) << "message '" << message << "' does not mention '" << part << "'";
  }
}

}  // namespace gknn::testing
