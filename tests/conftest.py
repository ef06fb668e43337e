pytest_plugins = ["tests.fixtures.spark", "tests.fixtures.postgres", "tests.fixtures.apps"]
