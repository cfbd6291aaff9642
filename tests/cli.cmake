# End-to-end tests of the gknn command-line tool: they run the built binary as a user would.
gknn_test(cli_test LABEL cpu SOURCES cli_test.cpp TIMEOUT 300)
add_dependencies(cli_test gknn_cli)
target_compile_definitions(cli_test PRIVATE GKNN_CLI_PATH="$<TARGET_FILE:gknn_cli>")
find_package(nlohmann_json 3 QUIET)
if(nlohmann_json_FOUND)
  target_link_libraries(cli_test PRIVATE nlohmann_json::nlohmann_json)
  target_compile_definitions(cli_test PRIVATE GKNN_HAVE_NLOHMANN_JSON=1)
endif()
